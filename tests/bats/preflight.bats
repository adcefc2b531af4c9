#!/usr/bin/env bats
# shellcheck disable=SC2016
# scripts/preflight against an ssh shim: the exact remote commands per node and role,
# one PASS/FAIL line per check, and nothing remote for the local target.

load helpers

setup() {
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  mkdir -p "$BUILD/beegfs-small" "$BUILD/local"
  jq -n '{lab: "beegfs-small", target: "baremetal", nodes: [
    {name: "mgmt0", group: "mgmt", roles: ["beegfs-mgmt"], address: "10.10.0.9"},
    {name: "mds0", group: "mds", roles: ["beegfs-meta", "beegfs-storage"], address: "10.10.0.1"},
    {name: "cli0", group: "cli", roles: ["beegfs-client"], address: "10.10.1.1"}]}' >"$BUILD/beegfs-small/inventory.json"
  jq -n '{lab: "local", target: "local", nodes: [{name: "mon0", roles: ["ceph-mon"], address: "10.99.0.10"}]}' \
    >"$BUILD/local/inventory.json"
  # The lab's one SSH config (scripts/lib/remote.sh writes it at remote-up).
  mkdir -p "$BUILD/beegfs-small/ssh"
  echo "Host *" >"$BUILD/beegfs-small/ssh/config"
  # Every remote check passes and prints a line, except the storage health of mds0.
  shim ssh '
cmd=${!#}; host=${@: -2:1}
if [[ $host == mds0 && $cmd == *"beegfs health storage" ]]; then
  echo "beegfs-storage@mds0: /dev/nvme13n1 uses LBA format 0, not the 4096-byte format 1"; exit 1
fi
echo "ok: ${cmd##*/roles/} on $host"'
}

preflight() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/preflight" "$@"
}

@test "a bare-metal lab: fabric on every node, tuning on servers, every role, then the cluster" {
  preflight beegfs-small
  assert_failure 1
  run calls ssh
  r="PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles"
  o="ssh -F $BUILD/beegfs-small/ssh/config -n"
  assert_output "$o mgmt0 $r/common health fabric
$o mgmt0 $r/common health tuning
$o mgmt0 $r/beegfs health mgmt
$o mds0 $r/common health fabric
$o mds0 $r/common health tuning
$o mds0 $r/beegfs health meta
$o mds0 $r/beegfs health storage
$o cli0 $r/common health fabric
$o cli0 $r/beegfs health client
$o mgmt0 $r/beegfs health cluster"
}

@test "one line per check, FAIL where a node's check fails, a summary, exit 1" {
  preflight beegfs-small
  assert_failure 1
  assert_line --index 0 "lab beegfs-small (baremetal): preflight of 3 nodes over ssh"
  assert_line "PASS mgmt0      fabric           ok: common health fabric on mgmt0"
  assert_line "FAIL mds0       beegfs-storage   beegfs-storage@mds0: /dev/nvme13n1 uses LBA format 0, not the 4096-byte format 1"
  assert_line "PASS cli0       beegfs-client    ok: beegfs health client on cli0"
  assert_line "preflight: 1 check(s) failed; fix them before benchmarking lab beegfs-small"
  [ "$(grep -c '^PASS' <<<"$output")" -eq 9 ]
}

@test "all checks passing exits 0; the remote paths come from the environment" {
  shim ssh 'echo fine'
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" \
    PFSLAB_REMOTE_ROOT=/srv/kit PFSLAB_REMOTE_CONFIG=/srv/node.json "$KIT/scripts/preflight" beegfs-small
  assert_success
  assert_line "preflight: every check passed on lab beegfs-small"
  assert_equal "$(calls ssh | head -n 1)" "ssh -F $BUILD/beegfs-small/ssh/config -n mgmt0 PFSLAB_NODE_CONFIG=/srv/node.json /srv/kit/scripts/roles/common health fabric"
}

@test "an unreachable node is a FAIL naming ssh" {
  shim ssh 'echo "ssh: connect to host ${@: -2:1} port 22: No route to host" >&2; exit 255'
  preflight beegfs-small
  assert_failure 1
  assert_line "FAIL mgmt0      fabric           ssh to mgmt0 (10.10.0.9) failed: ssh: connect to host mgmt0 port 22: No route to host"
}

@test "a remote lab without its SSH config: one line, no ssh" {
  rm "$BUILD/beegfs-small/ssh/config"
  preflight beegfs-small
  assert_failure 2
  assert_output "[preflight] error: lab beegfs-small has no SSH config ($BUILD/beegfs-small/ssh/config); run 'make remote-up LAB=beegfs-small'"
  [ -z "$(calls ssh)" ]
}

@test "the local target: nothing remote, and it says so" {
  preflight local
  assert_success
  assert_output "lab local: local target; nothing remote to check (the nodes are namespaces of this host, 'scripts/lab status' checks them)"
  [ -z "$(calls)" ]
}

@test "no inventory, or no active lab: one line, exit 2" {
  preflight nss73-ha
  assert_failure 2
  assert_output "[preflight] error: lab nss73-ha is not up (no $BUILD/nss73-ha/inventory.json); run 'make lab-up LAB=nss73-ha'"
  preflight
  assert_failure 2
  assert_output "[preflight] error: no lab is up; run 'make lab-up LAB=<lab>' first or name the lab"
  echo beegfs-small >"$BUILD/active-lab"
  shim ssh 'echo fine'
  preflight
  assert_success
}
