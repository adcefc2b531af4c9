# shellcheck shell=bash
# Target adapter: Amazon EC2 (registry/targets/aws.json). Sourced by scripts/lab and
# scripts/images after scripts/lib/common.sh; defines the target_* functions only.

# Any AWS credential source the SDKs read, without asking AWS.
aws_configured() {
  [[ -n ${AWS_ACCESS_KEY_ID:-} && -n ${AWS_SECRET_ACCESS_KEY:-} ]] && return 0
  [[ -n ${AWS_PROFILE:-}${AWS_WEB_IDENTITY_TOKEN_FILE:-}${AWS_CONTAINER_CREDENTIALS_FULL_URI:-}${AWS_CONTAINER_CREDENTIALS_RELATIVE_URI:-} ]] && return 0
  [[ -s ${AWS_SHARED_CREDENTIALS_FILE:-${HOME:-/nonexistent}/.aws/credentials} || -s ${AWS_CONFIG_FILE:-${HOME:-/nonexistent}/.aws/config} ]]
}

# Usage: target_credentials LAB WHO NONE    dies with one line when none work
target_credentials() {
  local who=$2 none=$3 out
  if command -v aws >/dev/null 2>&1; then
    # The CLI knows every source (profiles, SSO, instance roles): ask AWS itself.
    out=$(timeout 60 aws sts get-caller-identity --output text 2>&1) && return 0
    aws_configured &&
      die "$who: AWS credentials were found but do not work (aws sts get-caller-identity: $(sed '/^$/d' <<<"$out" | tail -n 1)); $none"
  elif aws_configured; then
    return 0
  fi
  die "$who needs AWS credentials (none found: set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure'); $none"
}

# What AWS still holds tagged with the lab and its owner, one ARN per line. Another
# user's lab of the same name (same lab tag, another owner) is not this lab's leftover.
target_leftovers() {
  local lab=$1 region owner
  region=$(lab_field "$lab" targets.aws.region)
  owner=$(lab_field "$lab" instance.owner)
  aws resourcegroupstaggingapi get-resources --region "$region" --tag-filters "Key=lab,Values=$lab" "Key=owner,Values=$owner" \
    --query 'ResourceTagMappingList[].ResourceARN' --output text | tr '\t' '\n' | sed '/^$/d; /^None$/d'
}

target_gone() { echo "nothing tagged lab=$1 owner=$(lab_field "$1" instance.owner) is left (aws resourcegroupstaggingapi get-resources)"; }

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
