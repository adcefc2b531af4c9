#!/usr/bin/env bats
# Terraform applied for real: the kit's AWS root and adapter, with the real AWS provider,
# against an EC2 API emulator on this machine (scripts/cloud-emulator: moto plus the
# calls it lacks). For each shipped AWS lab, `make lab-up` applies the real plan and
# writes the inventory, `make lab-down` destroys it, and EC2 itself (asked by this test's
# own code, tests/cloud/ec2_query.py, not the kit's) lists nothing tagged with the lab;
# the same after an apply killed with SIGKILL part way (two of the labs). A resource tagged with the lab
# but made outside Terraform is reported and removed only with PURGE=1; `make expired`
# lists the user's labs past their expiry tag.
# `make test-cloud` (and .ci/run) runs it; it needs the AWS provider in a Terraform
# filesystem mirror (PFSLAB_TF_PROVIDERS) and PyPI for the emulator's first start.

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file
load ../lib/timed
# shellcheck source=scripts/lib/ere.sh
source "$BATS_TEST_DIRNAME/../../scripts/lib/ere.sh"

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup_file() {
  local mirror=${PFSLAB_TF_PROVIDERS:-}
  if [[ -z $mirror || -z $(compgen -G "$mirror/registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*") ]]; then
    skip_file "the AWS provider is not in PFSLAB_TF_PROVIDERS='$mirror' (a Terraform filesystem mirror holding hashicorp/aws)"
    return 0
  fi
  [[ -x $REPO/.venv/bin/pfslab ]] || { skip_file "the kit's Python environment is missing: run 'make deps'"; return 0; }
  if [[ -s $REPO/build/active-lab ]]; then
    echo "# lab $(cat "$REPO/build/active-lab") is up in $REPO; this test brings up its own and refuses to share" >&3
    return 1
  fi
  PFSLAB_AWS_ENDPOINT=$("$REPO/scripts/cloud-emulator" start 2>&3 | tail -n 1)
  export PFSLAB_AWS_ENDPOINT AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1
  # One wave of creations: the provider waits 10 s per instance it starts, ten at a
  # time by default (a Terraform option; the kit's own commands are unchanged).
  export TF_CLI_ARGS_apply=-parallelism=64 TF_CLI_ARGS_destroy=-parallelism=64
  # Nothing of the user's own AWS configuration may reach the emulator or AWS.
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
  unset AWS_PROFILE AWS_SESSION_TOKEN
}

setup() { skip_when_file_skipped; }

teardown_file() {
  local lab
  if [[ -z ${PFSLAB_SKIP_FILE:-} && -n ${PFSLAB_AWS_ENDPOINT:-} ]]; then
    for lab in aws-cephfs aws-beegfs-medium aws-nfs; do
      [[ ! -d $REPO/build/$lab ]] || PFSLAB_PURGE=1 "$REPO/scripts/lab" down "$lab" >/dev/null 2>&1 || true
    done
    [[ ! -d $BATS_FILE_TMPDIR/other-owner/build/aws-cephfs ]] ||
      PFSLAB_ROOT=$BATS_FILE_TMPDIR/other-owner "$BATS_FILE_TMPDIR/other-owner/scripts/lab" down aws-cephfs >/dev/null 2>&1 || true
    "$REPO/scripts/cloud-emulator" stop >/dev/null 2>&1 || true
  fi
}

ec2() { "$REPO/build/cloud-emulator/venv/bin/python" "$REPO/tests/cloud/ec2_query.py" "$@"; }
resolved() { "$REPO/.venv/bin/pfslab" lab show "$1" --instance | jq -r "$2"; }
owner() { resolved "$1" .instance.owner; }

# What EC2 holds tagged with the lab and this user as owner (empty: nothing).
tagged_with_lab() { ec2 tagged "lab=$1" "owner=$(owner "$1")"; }

lab_up_checked() {
  local lab=$1 inv nodes efa
  run timed "lab-up $lab" make -C "$REPO" --no-print-directory lab-up LAB="$lab"
  echo "$output" | grep -v '^\[lab\] removed' >&3
  assert_success
  assert_line --regexp "^\[lab\] terraform: Apply complete! Resources: [0-9]+ added, 0 changed, 0 destroyed\.$"
  assert_line "[lab] PFSLAB_AWS_ENDPOINT=$PFSLAB_AWS_ENDPOINT is an EC2 API emulator: no instance boots behind it, so the SSH bring-up (host keys, first boot, cluster files, roles, preflight, calibration) is skipped"
  inv=$REPO/build/$lab/inventory.json
  nodes=$(resolved "$lab" '.derived.nodes | length')
  efa=$(resolved "$lab" '[.derived.nodes[].group as $g | .targets.aws.groups[$g].efa_interfaces] | add')
  # The inventory names what was created: one instance per node, its EFA interfaces,
  # the placement and security groups, the tags.
  assert_equal "$(jq '.aws.instance_ids | length' "$inv")" "$nodes"
  assert_equal "$(jq '[.aws.efa_interfaces[]] | flatten | length' "$inv")" "$efa"
  # Named per lab and owner (instance.cloud_name): another owner's lab of the same name
  # in the same account gets its own.
  assert_equal "$(jq -r .aws.placement_group "$inv")" "$(resolved "$lab" .instance.cloud_name)"
  assert_equal "$(jq -r '.aws.tags | "\(.lab) \(.owner) \(.deployment)"' "$inv")" "$lab $(owner "$lab") $(cat "$REPO/build/$lab/deployment")"
  # EC2 itself: those instances, of the planned types, in the placement group; EFA
  # interfaces of type efa; the security group admits its members and SSH from
  # ssh_cidrs only; every volume carries the lab's tags.
  run ec2 run "
inv = json.load(open('$inv'))
ids = list(inv['aws']['instance_ids'].values())
found = [i for r in ec2.describe_instances(InstanceIds=ids)['Reservations'] for i in r['Instances']]
print('instances', len(found), sorted({i['Placement']['GroupName'] for i in found}))
print('types', sorted({i['InstanceType'] for i in found}))
efa = [e for ids in inv['aws']['efa_interfaces'].values() for e in ids]
print('efa', len(efa), sorted({n['InterfaceType'] for n in ec2.describe_network_interfaces(NetworkInterfaceIds=efa)['NetworkInterfaces']}) if efa else [])
g = ec2.describe_security_groups(GroupIds=[inv['aws']['security_group']])['SecurityGroups'][0]
print('ingress', sorted(r.get('IpProtocol') + ':' + ','.join([p['GroupId'] for p in r['UserIdGroupPairs']] + [c['CidrIp'] for c in r['IpRanges']]) for r in g['IpPermissions']))
vols = ec2.describe_volumes(Filters=[{'Name': 'attachment.instance-id', 'Values': ids}])['Volumes']
print('volumes', len(vols), all({t['Key']: t['Value'] for t in v.get('Tags', [])}.get('lab') == '$lab' for v in vols))
"
  assert_success
  assert_line "instances $nodes ['$(resolved "$lab" .instance.cloud_name)']"
  assert_line "types $(resolved "$lab" '[.targets.aws.groups[].instance_type] | unique | map("'"'"'" + . + "'"'"'") | "[" + join(", ") + "]"')"
  if ((efa > 0)); then assert_line "efa $efa ['efa']"; else assert_line "efa 0 []"; fi
  assert_line "ingress ['-1:$(jq -r .aws.security_group "$inv")', 'tcp:$(resolved "$lab" '.targets.aws.ssh_cidrs | join(",")')']"
  assert_line --regexp "^volumes [1-9][0-9]* True$"
}

lab_down_checked() {
  local lab=$1
  run timed "lab-down $lab" make -C "$REPO" --no-print-directory lab-down
  echo "$output" | grep -v '^\[lab\] removed: module' >&3
  assert_success
  assert_line --regexp "^\[lab\] lab $lab is down in [0-9]+ s; nothing tagged lab=$lab owner=$(owner "$lab") is left \(EC2 asked type by type"
  run tagged_with_lab "$lab"
  assert_success
  assert_output ""
  [ ! -e "$REPO/build/$lab" ]
  [ ! -e "$REPO/build/active-lab" ]
}

# A zombie is not running: PID 1 here may not reap the children it inherits.
still_running() {
  local state
  state=$(ps -o stat= -p "$1") || return 1
  [[ $state != Z* ]]
}

# lab-up killed with SIGKILL while Terraform creates the instances: some of what it made
# is in no state file. Then lab-down removes it all.
killed_apply_then_down() {
  local lab=$1 log=$BATS_FILE_TMPDIR/killed-$1.log pid orphans
  make -C "$REPO" --no-print-directory lab-up LAB="$lab" >"$log" 2>&1 &
  pid=$!
  timeout 300 bash -c "until grep -q 'aws_instance.node.*Creation complete' '$REPO/build/$lab/terraform-apply.log' 2>/dev/null; do sleep 0.2; done"
  # The apply and the provider it started, by PID: CI runs make test beside this file,
  # whose terraform test runs start providers of their own.
  local apply_pid plugin_pids
  apply_pid=$(pgrep -f -- "^terraform -chdir=$(ere_quote "$REPO")/targets/aws/root apply")
  plugin_pids=$(pgrep -P "$apply_pid" || true)
  [ -n "$plugin_pids" ]
  kill -KILL "$apply_pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -ne 0 ]
  # What EC2 has of the lab that the state does not record: the sweep's work.
  orphans=$(comm -23 <(tagged_with_lab "$lab" | cut -d' ' -f2 | sort) \
    <(jq -r '.resources[].instances[].attributes | .id, .key_name // empty' "$REPO/build/$lab/terraform.tfstate" | sort -u) | wc -l)
  echo "# $lab: apply killed with $(tagged_with_lab "$lab" | wc -l) resources in EC2, $orphans of them in no state file" >&3
  ((orphans > 0))
  lab_down_checked "$lab"
  local left
  for left in $apply_pid $plugin_pids; do
    run still_running "$left"
    assert_failure
  done
  run pgrep -f -- "^terraform -chdir=$(ere_quote "$REPO")/targets/aws/root (apply|destroy)|$(ere_quote "$REPO/build/$lab/.terraform/providers/")"
  assert_failure
}

# Another user's checkout of the kit (its own build/), in the same account.
other_checkout() {
  local copy=$BATS_FILE_TMPDIR/other-owner entry
  mkdir -p "$copy/labs"
  for entry in scripts families registry pfslab reframe targets terraform .venv; do ln -sfn "$REPO/$entry" "$copy/$entry"; done
  cp "$REPO"/labs/*.yaml "$REPO/labs/schema.json" "$copy/labs/"
  echo "$copy"
}

# The first lab-up and lab-down of the file: the real plan applied, the inventory checked
# against EC2, nothing tagged with the lab left; while it is up, another owner's.
@test "aws-cephfs: lab-up applies the real plan and writes the inventory; a second owner's lab beside it in one account; each lab-down leaves nothing of its own and only that" {
  local lab=aws-cephfs copy mine theirs theirs_before nodes
  copy=$(other_checkout)
  nodes=$(resolved "$lab" '.derived.nodes | length')
  lab_up_checked "$lab"
  run timed "lab-up $lab (owner bob, another checkout)" env OWNER=bob PFSLAB_ROOT="$copy" "$copy/scripts/lab" up "$lab"
  echo "$output" | grep -v '^\[lab\] removed' >&3
  assert_success
  assert_line --regexp "^\[lab\] terraform: Apply complete! Resources: [0-9]+ added, 0 changed, 0 destroyed\.$"
  # What must be unique in the account is named per lab and owner: two names.
  mine=$(jq -r .aws.placement_group "$REPO/build/$lab/inventory.json")
  theirs=$(jq -r .aws.placement_group "$copy/build/$lab/inventory.json")
  assert_equal "$theirs" "$(jq -r .instance.cloud_name "$copy/build/$lab/lab.json")"
  [ "$mine" != "$theirs" ]
  theirs_before=$(ec2 tagged "lab=$lab" owner=bob | sort)
  assert_equal "$(grep -c '^instance ' <<<"$theirs_before")" "$nodes"
  grep -qx "key-pair $theirs" <<<"$theirs_before"
  grep -qx "placement-group $theirs" <<<"$theirs_before"
  run tagged_with_lab "$lab"
  assert_line "key-pair $mine"
  # Mine goes; bob's stays as it was, then goes with his own lab-down.
  lab_down_checked "$lab"
  assert_equal "$(ec2 tagged "lab=$lab" owner=bob | sort)" "$theirs_before"
  run timed "lab-down $lab (owner bob)" env PFSLAB_ROOT="$copy" "$copy/scripts/lab" down "$lab"
  echo "$output" | grep -v '^\[lab\] removed: module' >&3
  assert_success
  assert_line --regexp "^\[lab\] lab $lab is down in [0-9]+ s; nothing tagged lab=$lab owner=bob is left"
  run ec2 tagged "lab=$lab" owner=bob
  assert_output ""
  [ ! -e "$copy/build/$lab" ]
}

@test "aws-beegfs-medium: 39 instances, 38 EFA interfaces up; lab-down leaves nothing" {
  lab_up_checked aws-beegfs-medium
  lab_down_checked aws-beegfs-medium
}

@test "aws-nfs: up; a resource tagged with the lab but made outside Terraform is reported, and removed only with PURGE=1" {
  local lab=aws-nfs me stray other
  lab_up_checked "$lab"
  me=$(owner "$lab")
  stray=$(ec2 run "print(ec2.create_volume(AvailabilityZone='us-east-1b', Size=1, TagSpecifications=[{'ResourceType': 'volume', 'Tags': [{'Key': 'lab', 'Value': '$lab'}, {'Key': 'owner', 'Value': '$me'}]}])['VolumeId'])")
  other=$(ec2 run "print(ec2.create_volume(AvailabilityZone='us-east-1b', Size=1, TagSpecifications=[{'ResourceType': 'volume', 'Tags': [{'Key': 'lab', 'Value': '$lab'}, {'Key': 'owner', 'Value': 'someone-else'}]}])['VolumeId'])")
  run timed "lab-down $lab (a stray volume)" make -C "$REPO" --no-print-directory lab-down
  assert_failure 2
  assert_line "[lab] left behind: volume $stray: tagged lab=$lab owner=$me but not made by this lab's lab-up"
  assert_line "[lab] error: lab $lab is not completely down; the lines above are still tagged lab=$lab owner=$me; check them, then remove them yourself or with 'make lab-down LAB=$lab PURGE=1'"
  refute_output --partial "$other"
  run tagged_with_lab "$lab"
  assert_output "volume $stray"
  run timed "lab-down $lab PURGE=1" make -C "$REPO" --no-print-directory lab-down LAB="$lab" PURGE=1
  assert_success
  assert_line "[lab] removed volume $stray"
  run tagged_with_lab "$lab"
  assert_output ""
  # Another owner's lab of the same name is not this user's to remove.
  run ec2 tagged "lab=$lab" owner=someone-else
  assert_output "volume $other"
  ec2 run "ec2.delete_volume(VolumeId='$other')"
}

# The sweep after a killed apply, on two of the three labs: one module makes all three,
# with the same kinds of resource (aws-cephfs: 18 nodes, no EFA; aws-nfs 33, no EFA;
# aws-beegfs-medium 39 with 38 EFA interfaces): a third run of the same path proved nothing more.
@test "aws-beegfs-medium: an apply killed with SIGKILL part way, then lab-down: nothing tagged with the lab is left" {
  killed_apply_then_down aws-beegfs-medium
}

@test "aws-nfs: an apply killed with SIGKILL part way, then lab-down: nothing tagged with the lab is left" {
  killed_apply_then_down aws-nfs
}

@test "make expired lists the user's labs past their expiry tag, and only with ALL=1 another user's" {
  local me ids
  me=$(owner aws-cephfs)
  ids=$(ec2 run "
def vol(lab, owner, expiry):
    tags = {'pfslab': 'managed', 'lab': lab, 'owner': owner, 'expiry': expiry}
    return ec2.create_volume(AvailabilityZone='us-east-1a', Size=1, TagSpecifications=[{'ResourceType': 'volume', 'Tags': [{'Key': k, 'Value': v} for k, v in tags.items()]}])['VolumeId']
print(vol('old-lab', '$me', '2020-01-01T00:00:00Z'), vol('old-lab', '$me', '2020-01-01T00:00:00Z'),
      vol('fresh-lab', '$me', '2999-01-01T00:00:00Z'), vol('their-lab', 'someone-else', '2021-06-01T12:00:00Z'))")
  run make -C "$REPO" --no-print-directory expired
  assert_success
  assert_line --regexp "^lab old-lab \(owner $me, us-east-1\) expired at 2020-01-01T00:00:00Z, [0-9]+\.[0-9] h ago, and still holds 2 volumes: make lab-down LAB=old-lab$"
  refute_output --partial "fresh-lab"
  refute_output --partial "their-lab"
  assert_line "1 expired lab(s) of owner $me in us-east-1"
  run make -C "$REPO" --no-print-directory expired ALL=1
  assert_success
  assert_line --regexp "^lab their-lab \(owner someone-else, us-east-1\) expired at 2021-06-01T12:00:00Z"
  assert_line "2 expired lab(s) of anyone in us-east-1"
  ec2 run "[ec2.delete_volume(VolumeId=v) for v in '$ids'.split()]"
}

@test "lab-up with no provider in PFSLAB_TF_PROVIDERS: one line, nothing created" {
  local empty=$BATS_FILE_TMPDIR/no-providers
  mkdir -p "$empty"
  PFSLAB_TF_PROVIDERS=$empty run make -C "$REPO" --no-print-directory lab-up LAB=aws-cephfs
  assert_failure 2
  assert_line "[lab] error: lab aws-cephfs: terraform init failed in targets/aws/root: its providers (hashicorp/aws) are not in PFSLAB_TF_PROVIDERS=$empty; nothing was created (only $REPO/build/aws-cephfs/terraform-init.log was written)"
  run tagged_with_lab aws-cephfs
  assert_output ""
  rm -rf "$REPO/build/aws-cephfs"
}
