#!/usr/bin/env bats
# shellcheck disable=SC2016
# `make lab-up` / `make lab-down` of cloud labs (scripts/lab's cloud branches) with
# shims for az and terraform: without credentials or provider, one line and nothing
# created; lab-down lists what it removed, then that nothing tagged with the lab is
# left. AWS is asked through boto3 (pfslab aws): its lab-up and lab-down run for real
# against an EC2 API emulator in tests/cloud (make test-cloud); here only what needs no
# API (no credentials, a bad emulator URL). Each test works in a throwaway copy of the kit (PFSLAB_ROOT), so a lab
# running in the real checkout is neither seen nor touched.

load helpers

setup() {
  sandbox
  [[ -x $KIT/.venv/bin/python ]] || skip "the kit's Python environment is missing: run 'make deps'"
  COPY=$BATS_TEST_TMPDIR/kit
  mkdir -p "$COPY/labs"
  for entry in scripts families registry pfslab reframe spack targets terraform .venv; do ln -s "$KIT/$entry" "$COPY/$entry"; done
  cp "$KIT"/labs/*.yaml "$KIT/labs/schema.json" "$COPY/labs/"
  for t in rmdir ssh-keygen env sha1sum python3 od; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  shim ssh
  shim scp
  HOMEDIR=$BATS_TEST_TMPDIR/home
  mkdir -p "$HOMEDIR"
}

lab() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$HOMEDIR" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" \
    PFSLAB_ROOT="$COPY" PFSLAB_LEFTOVER_WAIT=0 ${LAB_ENV[@]+"${LAB_ENV[@]}"} "$COPY/scripts/lab" "$@"
}

# A terraform shim whose init fails as it does here (no registry).
terraform_offline() {
  shim terraform '
case " $* " in
  *" init "*) echo "Error: Failed to query available provider packages" >&2; exit 1 ;;
esac'
}

@test "lab-up of an aws lab with no credentials: one line, nothing created" {
  terraform_offline
  LAB_ENV=(AWS_EC2_METADATA_DISABLED=true)
  lab up aws-beegfs-medium
  assert_failure 2
  assert_output "[lab] error: lab aws-beegfs-medium needs AWS credentials (none found: set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure'); nothing was created"
  [ ! -e "$COPY/build" ]
  [ -z "$(calls terraform)" ]
}

@test "lab-up of an aws lab with a PFSLAB_AWS_ENDPOINT that is not an emulator URL: one line naming it, nothing created" {
  terraform_offline
  LAB_ENV=(AWS_EC2_METADATA_DISABLED=true AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing PFSLAB_AWS_ENDPOINT=ftp://127.0.0.1/ec2)
  lab up aws-cephfs
  assert_failure 2
  assert_output "[lab] error: PFSLAB_AWS_ENDPOINT='ftp://127.0.0.1/ec2' is not allowed; give the http(s) URL of an EC2 API emulator, host and port only (e.g. http://127.0.0.1:41901); nothing was created"
  [ ! -e "$COPY/build" ]
  [ -z "$(calls terraform)" ]
}

@test "lab-up of an azure lab without az login: one line, nothing created" {
  terraform_offline
  shim az 'echo "Please run '"'"'az login'"'"' to setup account." >&2; exit 1'
  lab up azure-beegfs-medium
  assert_failure 2
  assert_output "[lab] error: lab azure-beegfs-medium needs Azure credentials (none found: run 'az login', or set ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and ARM_SUBSCRIPTION_ID); nothing was created"
  assert_equal "$(calls az)" "az account show --output none"
  [ ! -e "$COPY/build" ]
}

@test "lab-up of a cloud lab is checked before a running local lab is: the credentials line comes first" {
  mkdir -p "$COPY/build"
  echo local >"$COPY/build/active-lab"
  terraform_offline
  lab up aws-beegfs-medium
  assert_failure 2
  assert_output --partial "needs AWS credentials"
  [ ! -e "$COPY/build/aws-beegfs-medium" ]
}

# A lab that was up: state, an initialised .terraform, an inventory.
was_up() {
  local lab=$1
  mkdir -p "$COPY/build/$lab/.terraform"
  echo '{"version": 4, "resources": [{}]}' >"$COPY/build/$lab/terraform.tfstate"
  echo '{}' >"$COPY/build/$lab/inventory.json"
  echo "$lab" >"$COPY/build/active-lab"
  shim terraform '
case " $* " in
  *" state list "*) printf "%s\n" "module.lab.data.aws_ami.image[\"server\"]" "module.lab.aws_instance.node[\"cli0\"]" "module.lab.aws_placement_group.lab[0]" "module.lab.aws_security_group.lab" ;;
  *" destroy "*) echo "Destroy complete! Resources: 3 destroyed." ;;
esac'
}

@test "lab-down of an azure lab asks Azure for anything tagged with the lab and its owner" {
  was_up azure-beegfs-medium
  shim az 'exit 0'
  LAB_ENV=(SUDO_USER=bob USER=root)
  lab down azure-beegfs-medium
  assert_success
  assert_equal "$(calls az | tail -n 1)" "az resource list --tag lab=azure-beegfs-medium --query [?tags.owner=='bob'].id --output tsv"
  assert_line --regexp "nothing tagged lab=azure-beegfs-medium owner=bob is left \(az resource list --tag lab=azure-beegfs-medium\)$"
}

# A cloud account holding resources of two users' labs of the same name: "ID LAB OWNER"
# lines in $SHIM_STATE/resources. The shim filters on the tags as Azure does.
two_users_resources() {
  printf '%s\n' "/subscriptions/s/vm-bob $1 bob" >"$SHIM_STATE/resources"
  shim az '
lab="" owner=""
while (($#)); do
  case $1 in --tag) lab=${2#lab=}; shift ;; --query) owner=$(sed -n "s/.*tags.owner==.\([^]]*\).\].*/\1/p" <<<"$2"); shift ;; esac
  shift
done
while read -r id l o; do
  [[ $id == /* && $l == "$lab" && ( -z $owner || $o == "$owner" ) ]] && echo "$id"
done <"$SHIM_STATE/resources"
exit 0'
}

@test "lab-down of an azure lab: another owner's resources with the same lab tag are not this user's leftovers" {
  was_up azure-beegfs-medium
  two_users_resources azure-beegfs-medium
  LAB_ENV=(OWNER=alice)
  lab down azure-beegfs-medium
  assert_success
  refute_output --partial "vm-bob"
  was_up azure-beegfs-medium
  LAB_ENV=(OWNER=bob)
  lab down azure-beegfs-medium
  assert_failure 2
  assert_line "[lab] left behind: /subscriptions/s/vm-bob"
}

# A listing of what is left that fails proves nothing: lab-down fails in one line and
# keeps build/<lab> (what a second lab-down needs), on every remote target.
assert_listing_failed() {
  local lab=$1 target=$2 why=$3
  assert_failure 2
  assert_line "[lab] error: lab $lab: asking $target what is left failed ($why), so it is not known to be down; $COPY/build/$lab is kept: run 'make lab-down LAB=$lab' again"
  assert_equal "$(grep -c 'error' <<<"$output")" 1
  refute_output --partial "nothing"
  refute_output --partial "is down"
  [ -s "$COPY/build/$lab/terraform.tfstate" ]
  assert_equal "$(cat "$COPY/build/active-lab")" "$lab"
}

@test "lab-down of an azure lab whose listing fails: exit 2, one line, build/<lab> kept" {
  was_up azure-beegfs-medium
  shim az '[[ $1 == account ]] && exit 0
echo "ERROR: (AuthorizationFailed) The client may not perform action Microsoft.Resources/resources/read" >&2
exit 1'
  lab down azure-beegfs-medium
  assert_listing_failed azure-beegfs-medium azure "ERROR: (AuthorizationFailed) The client may not perform action Microsoft.Resources/resources/read"
  # An az that fails saying nothing fails the same way.
  shim az '[[ $1 == account ]] && exit 0; exit 1'
  lab down azure-beegfs-medium
  assert_listing_failed azure-beegfs-medium azure "no reason given"
}

@test "lab-down of an aws lab whose EC2 listing fails: exit 2, one line, build/<lab> kept" {
  was_up aws-nfs
  # The kit's pfslab with EC2 answering the credentials check and the sweep, and the
  # listing after them failing as targets/aws/cloud.py reports a failed call (one line, exit 2).
  rm "$COPY/.venv"
  mkdir -p "$COPY/.venv/bin"
  printf '%s\n' '#!/bin/bash' 'case "$1 $2" in' \
    '  "aws whoami") echo arn:aws:iam::123456789012:user/tester ;;' \
    '  "aws sweep") ;;' \
    '  "aws leftovers") echo "pfslab aws: listing what lab aws-nfs holds: An error occurred (RequestLimitExceeded) when calling the DescribeVolumes operation" >&2; exit 2 ;;' \
    "  *) exec '$KIT/.venv/bin/pfslab' \"\$@\" ;;" 'esac' >"$COPY/.venv/bin/pfslab"
  chmod +x "$COPY/.venv/bin/pfslab"
  lab down aws-nfs
  assert_listing_failed aws-nfs aws "pfslab aws: listing what lab aws-nfs holds: An error occurred (RequestLimitExceeded) when calling the DescribeVolumes operation"
}

@test "lab-down of an existing-hosts lab whose state cannot be listed after destroy: exit 2, one line, build/<lab> kept" {
  was_up baremetal-cephfs-hosts
  shim terraform '
case " $* " in
  *" state list "*) [[ -e $SHIM_STATE/destroyed ]] || exit 0; printf "%s\n" "╷" "│ Error: Failed to load state: permission denied" "╵" >&2; exit 1 ;;
  *" destroy "*) touch "$SHIM_STATE/destroyed"; echo "Destroy complete! Resources: 1 destroyed." ;;
esac'
  lab down baremetal-cephfs-hosts
  assert_listing_failed baremetal-cephfs-hosts baremetal "Error: Failed to load state: permission denied"
}

@test "lab-down of a cloud lab without credentials: one line, nothing destroyed" {
  was_up aws-nfs
  LAB_ENV=(AWS_EC2_METADATA_DISABLED=true)
  lab down aws-nfs
  assert_failure 2
  assert_output "[lab] error: lab aws-nfs needs AWS credentials (none found: set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure'); nothing was destroyed"
  [ -z "$(calls terraform)" ]
  [ -s "$COPY/build/aws-nfs/terraform.tfstate" ]
}

teardown() {
  [[ -z ${HOLDER:-} ]] || kill "$HOLDER" 2>/dev/null || true
}

# Another command holding LAB's lock as WHAT (lock_lab itself), until teardown ends it.
hold_lock() {
  local lab=$1 what=$2
  PFSLAB_ROOT=$COPY bash -c 'source "$PFSLAB_ROOT/scripts/lib/common.sh"; lock_lab "$1" "$2" || exit 1; touch "$3"; exec sleep 60' \
    _ "$lab" "$what" "$BATS_TEST_TMPDIR/held" </dev/null >/dev/null 2>&1 &
  HOLDER=$!
  local i
  for i in $(seq 50); do [[ -e $BATS_TEST_TMPDIR/held ]] && return 0; sleep 0.1; done
  false
}

# The shims of an existing-hosts lab that comes up (the hosts already run this kit;
# cloud_remote.bats tests the kit's unpacking).
hosts_lab_shims() {
  digest=$(cd "$COPY" && PFSLAB_ROOT="$COPY" bash -c 'source scripts/lib/common.sh; source scripts/lib/images.sh; image_digest')
  shim ssh "[[ \${!#} == *pfslab-manifest* ]] && echo $digest; exit 0"
  shim terraform '
case " $* " in
  *" init "*) mkdir -p "$TF_DATA_DIR" ;;
  *" apply "*) echo "Apply complete! Resources: 5 added, 0 changed, 0 destroyed." ;;
  *" output -json inventory"*) printf "%s\n" "{\"lab\":\"baremetal-cephfs-hosts\",\"target\":\"baremetal\",\"ssh\":{\"user\":\"root\"},\"nodes\":[{\"name\":\"mon0\",\"address\":\"192.0.2.10\",\"roles\":[\"ceph-mon\"]}],\"phases\":[[{\"node\":\"mon0\",\"role\":\"ceph-mon\"}]],\"baremetal\":{\"hosts\":{\"mon0\":\"192.0.2.10\"}}}" ;;
  *" output -json boot_scripts"*) printf "%s\n" "{\"mon0\":\"#!/bin/sh\\necho first boot\\n\"}" ;;
esac'
}

@test "lab-up of an existing-hosts lab: no provider, apply, boot scripts, then the SSH bring-up" {
  hosts_lab_shims
  lab up baremetal-cephfs-hosts
  assert_success
  assert_line "[lab] terraform: Apply complete! Resources: 5 added, 0 changed, 0 destroyed."
  assert_line --regexp "^\[lab\] lab baremetal-cephfs-hosts is up and healthy in [0-9]+ s on baremetal$"
  run cat "$COPY/build/baremetal-cephfs-hosts/boot/mon0.sh"
  assert_output "#!/bin/sh
echo first boot"
  [ -s "$COPY/build/baremetal-cephfs-hosts/ssh/id_ed25519" ]
  [ -s "$COPY/build/baremetal-cephfs-hosts/ssh/id_ed25519.pub" ]
  assert_equal "$(stat -c %a "$COPY/build/baremetal-cephfs-hosts/ssh")" 700
  assert_equal "$(calls terraform | head -n 1)" "terraform -chdir=$COPY/targets/baremetal/root init -input=false -no-color -backend-config=path=$COPY/build/baremetal-cephfs-hosts/terraform.tfstate"
  # The private key never reaches Terraform: only the .pub path is passed.
  refute [ -n "$(calls terraform | grep -E 'id_ed25519( |$)')" ]
  assert_equal "$(calls ssh | grep -c 'sh -s$')" 1
  assert_equal "$(cat "$COPY/build/active-lab")" baremetal-cephfs-hosts
}

@test "a second lab-up of a lab whose lab-up is running is refused in one line naming it; the first is left alone" {
  hosts_lab_shims
  hold_lock baremetal-cephfs-hosts lab-up
  lab up baremetal-cephfs-hosts
  assert_failure 2
  assert_output --regexp "^\[lab\] error: lab baremetal-cephfs-hosts is busy: its lab-up \(pid $HOLDER, since [0-9]{2}:[0-9]{2}:[0-9]{2} UTC\) is still running; wait for it to end \(or end it\), then run this again$"
  refute [ -n "$(calls terraform | grep -E ' (apply|destroy) ')" ]
  [ -z "$(calls ssh)" ]
  [ ! -e "$COPY/build/active-lab" ]
}

@test "lab-down of a lab whose bench is running is refused, naming the bench" {
  was_up baremetal-cephfs-hosts
  hold_lock baremetal-cephfs-hosts bench
  lab down baremetal-cephfs-hosts
  assert_failure 2
  assert_output --regexp "^\[lab\] error: lab baremetal-cephfs-hosts is busy: its bench \(pid $HOLDER, since .*\) is still running"
  [ -z "$(calls terraform)" ]
  [ -s "$COPY/build/baremetal-cephfs-hosts/terraform.tfstate" ]
}

@test "a bench of a lab whose lab-up is running is refused, naming the lab-up" {
  mkdir -p "$COPY/build/aws-nfs"
  echo aws-nfs >"$COPY/build/active-lab"
  echo '{"target": "aws"}' >"$COPY/build/aws-nfs/inventory.json"
  hold_lock aws-nfs lab-up
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$HOMEDIR" SHIM_LOG="$SHIM_LOG" PFSLAB_ROOT="$COPY" "$COPY/scripts/bench"
  assert_failure 2
  assert_output --regexp "^\[bench\] error: lab aws-nfs is busy: its lab-up \(pid $HOLDER, since .*\) is still running"
  [ -z "$(calls ssh)" ]
}

@test "a lock left by a command that is gone does not block the next one" {
  hosts_lab_shims
  mkdir -p "$COPY/build/baremetal-cephfs-hosts"
  # A pid that cannot be running (above pid_max): its holder is gone.
  echo "4194305 12:00:00 lab-up" >"$COPY/build/baremetal-cephfs-hosts/lock"
  lab up baremetal-cephfs-hosts
  assert_success
  assert_line --regexp "^\[lab\] lab baremetal-cephfs-hosts is up and healthy in [0-9]+ s on baremetal$"
}
