# shellcheck shell=bash
# Target adapter: Amazon EC2 (targets/aws/target.json). Sourced for scripts/lab (pfslab/lifecycle/adapter.py) and
# scripts/images after scripts/lib/common.sh; defines the target_* functions only.
# The kit asks AWS through boto3 (pfslab aws, targets/aws/cloud.py); PFSLAB_AWS_ENDPOINT names
# an EC2 API emulator to ask instead (the kit's tests: scripts/cloud-emulator).

# The Packer source scripts/images builds this target's images with.
target_packer_source() { echo amazon-ebs.debian; }

# Usage: target_credentials LAB WHO NONE    dies with one line when none work
target_credentials() {
  local lab=$1 who=$2 none=$3 out region=us-east-1
  [[ -z $lab ]] || region=$(lab_field "$lab" targets.aws.region)
  # STS GetCallerIdentity knows every source the SDKs read (profiles, SSO, roles).
  out=$(pfslab aws whoami --region "$region" 2>&1) && return 0
  [[ $out != *"PFSLAB_AWS_ENDPOINT="* ]] || die "${out#pfslab aws: }; $none"
  [[ $out == *"no AWS credentials"* ]] &&
    die "$who needs AWS credentials (none found: set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure'); $none"
  die "$who: AWS credentials were found but do not work (${out#pfslab aws: }); $none"
}

# Terraform variables of this target beyond the kit's: the emulator's URL, when one is named.
target_tf_vars() {
  [[ -z ${PFSLAB_AWS_ENDPOINT:-} ]] || printf '%s\n' -var "aws_endpoint=$PFSLAB_AWS_ENDPOINT"
}

# Why the lab's machines do not boot (an emulator answers the API, nothing runs behind
# it), or exit 1 when they do.
target_emulated() {
  [[ -n ${PFSLAB_AWS_ENDPOINT:-} ]] || return 1
  echo "PFSLAB_AWS_ENDPOINT=$PFSLAB_AWS_ENDPOINT is an EC2 API emulator: no instance boots behind it"
}

# The deployment id lab-up drew (pfslab/lifecycle/terraform.py: deployment), when there is one.
aws_deployment_args() {
  local file
  file=$(state_dir "$1")/deployment
  [[ ! -s $file ]] || printf '%s\n' --deployment "$(<"$file")"
}

# What EC2 still holds tagged with the lab and its owner, one resource per line, asked
# type by type (targets/aws/cloud.py). Another user's lab of the same name (same lab tag,
# another owner) is not this lab's leftover.
target_leftovers() {
  local args
  mapfile -t args < <(aws_deployment_args "$1")
  pfslab aws leftovers "$PFSLAB_LAB_JSON" "${args[@]}"
}

# Remove what this lab's lab-up made and the Terraform state lost (an apply killed part
# way). Usage: target_sweep LAB STATE_FILE (before destroy: only what the state does not
# record) or target_sweep LAB "" PURGE (after it: the rest; PURGE, what others made with
# the lab's tags too).
target_sweep() {
  local args
  mapfile -t args < <(aws_deployment_args "$1")
  [[ -z ${2:-} ]] || args+=(--state "$2")
  [[ -z ${3:-} ]] || args+=(--purge)
  pfslab aws sweep "$PFSLAB_LAB_JSON" "${args[@]}"
}

target_gone() { echo "nothing tagged lab=$1 owner=$(lab_field "$1" instance.owner) is left (EC2 asked type by type: instances, interfaces, volumes, addresses, groups, key pairs, VPC pieces)"; }

# The user's labs past their expiry tag, in every region a lab of the kit uses (and
# REGIONS); ALL=1 lists everyone's.
target_expired() {
  local args=() region
  for region in $(resolved_labs aws | jq -r '.targets.aws.region? // empty' | sort -u) ${REGIONS:-}; do
    args+=(--region "$region")
  done
  [[ -z ${ALL:-} ]] || args+=(--all-owners)
  pfslab aws expired "${args[@]}"
}

# The instance's console as EC2 keeps it (cloud-init prints the host keys there): what
# scripts/lib/remote.sh pins them from before the first SSH connection.
# shellcheck disable=SC2034 # read by scripts/lib/remote.sh
TARGET_CONSOLE_CMD=aws
target_console() {
  local lab=$1 node=$2 inv id region
  inv=$(remote_inv "$lab")
  id=$(jq -er --arg n "$node" '.aws.instance_ids[$n]' "$inv")
  region=$(jq -er '.aws.region' "$inv")
  # --latest (Nitro instances) shows the console now, not as of the last snapshot.
  aws ec2 get-console-output --region "$region" --instance-id "$id" --latest --query Output --output text 2>/dev/null ||
    aws ec2 get-console-output --region "$region" --instance-id "$id" --query Output --output text
}
