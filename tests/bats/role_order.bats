#!/usr/bin/env bats
# The local lab starts roles in the phase order of the family files
# (families/*/family.json), the same order the lab plan gives cloud nodes: the
# phases the kit derives once (pfslab/layout.py) and hands to the inventory.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  [[ -x $REPO/.venv/bin/pfslab ]] || skip "the kit's command is missing: run 'make deps'"
  export PFSLAB_ROOT=$REPO
  # shellcheck source=scripts/lib/common.sh
  source "$REPO/scripts/lib/common.sh"
  # shellcheck source=scripts/lib/local.sh
  source "$REPO/scripts/lib/local.sh"
}

# An inventory as the local root writes it: the lab's derived phases, its netns names.
inventory_of() {
  "$REPO/.venv/bin/pfslab" lab show "$1" |
    jq '{phases: .derived.phases, nodes: .derived.nodes,
         local: {netns: (.derived.nodes | map({(.name): "ns-\(.name)"}) | add), state_root: "/s"}}' \
      >"$BATS_TEST_TMPDIR/inventory.json"
}

@test "BeeGFS roles start management first, then metadata and storage, the monitor, the clients" {
  inventory_of beegfs-medium
  run role_table "$BATS_TEST_TMPDIR/inventory.json"
  assert_success
  run cut -d' ' -f2 <<<"$output"
  run uniq <<<"$output"
  assert_output "beegfs-mgmt
beegfs-meta
beegfs-storage
beegfs-mon
beegfs-client"
  run head -n 1 <<<"$(role_table "$BATS_TEST_TMPDIR/inventory.json")"
  assert_output "mgmt0 beegfs-mgmt ns-mgmt0 /s/nodes/mgmt0/node.json"
}

@test "Ceph roles start in the order mon, mgr, osd, mds, client whatever the node order" {
  inventory_of local
  run role_table "$BATS_TEST_TMPDIR/inventory.json"
  assert_success
  run cut -d' ' -f2 <<<"$output"
  run uniq <<<"$output"
  assert_output "ceph-mon
ceph-mgr
ceph-osd
ceph-mds
ceph-client"
}

@test "an inventory written before it had phases still lists every role" {
  inventory_of local
  jq 'del(.phases)' "$BATS_TEST_TMPDIR/inventory.json" >"$BATS_TEST_TMPDIR/old.json"
  run role_table "$BATS_TEST_TMPDIR/old.json"
  assert_success
  assert_line "osd2 ceph-osd ns-osd2 /s/nodes/osd2/node.json"
  assert_equal "$(sort <<<"$output")" "$(role_table "$BATS_TEST_TMPDIR/inventory.json" | sort)"
}
