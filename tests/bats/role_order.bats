#!/usr/bin/env bats
# The local lab starts roles in the phase order of the family files
# (registry/families/*.json), the same order the lab plan gives cloud nodes.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  export PFSLAB_ROOT=$REPO
  # shellcheck source=scripts/lib/common.sh
  source "$REPO/scripts/lib/common.sh"
  # shellcheck source=scripts/lib/local.sh
  source "$REPO/scripts/lib/local.sh"
}

inventory() {
  jq -n --argjson nodes "$1" '{local: {netns: ($nodes | map({(.name): "ns-\(.name)"}) | add), state_root: "/s"}, nodes: $nodes}' \
    >"$BATS_TEST_TMPDIR/inventory.json"
}

@test "BeeGFS roles start management first, then metadata and storage, the monitor, the clients" {
  inventory '[{"name": "cli0", "roles": ["beegfs-client"]}, {"name": "mon0", "roles": ["beegfs-mon"]},
              {"name": "ss0", "roles": ["beegfs-storage"]}, {"name": "mds0", "roles": ["beegfs-meta", "beegfs-mgmt"]}]'
  run role_table "$BATS_TEST_TMPDIR/inventory.json"
  assert_success
  assert_output "mds0 beegfs-mgmt ns-mds0 /s/nodes/mds0/node.json
ss0 beegfs-storage ns-ss0 /s/nodes/ss0/node.json
mds0 beegfs-meta ns-mds0 /s/nodes/mds0/node.json
mon0 beegfs-mon ns-mon0 /s/nodes/mon0/node.json
cli0 beegfs-client ns-cli0 /s/nodes/cli0/node.json"
}

@test "Ceph roles start in the order mon, mgr, osd, mds, client whatever the node order" {
  inventory '[{"name": "cli0", "roles": ["ceph-client"]}, {"name": "osd0", "roles": ["ceph-osd"]},
              {"name": "mon0", "roles": ["ceph-mds", "ceph-mgr", "ceph-mon"]}]'
  run role_table "$BATS_TEST_TMPDIR/inventory.json"
  assert_success
  run cut -d' ' -f2 <<<"$output"
  assert_output "ceph-mon
ceph-mgr
ceph-osd
ceph-mds
ceph-client"
}
