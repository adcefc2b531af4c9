#!/usr/bin/env bats
# Two checkouts' local labs on one host: nsrsh resolves a host only among its own lab
# instance's node records (PFSLAB_NSRSH_HOSTS, from the job environment), never in the
# other checkout's lab that has a node of the same name. The records here are files
# in a temp dir; nsrsh stops at the namespace check, so nothing is entered.

load helpers

setup() {
  A=$BATS_TEST_TMPDIR/run/local-aaaaaaaa/hosts
  B=$BATS_TEST_TMPDIR/run/local-bbbbbbbb/hosts
  mkdir -p "$A" "$B"
  # "ADDRESS NAME NETNS MOUNT_SOURCE MOUNT_PATH", as node-config writes them.
  echo "10.99.0.14 cli0 pfs-aaaaaa-cli0 /a/build/local/lab/nodes/cli0/mnt /mnt/pfslab/local-aaaaaaaa" >"$A/cli0"
  echo "10.98.0.14 cli0 pfs-bbbbbb-cli0 /b/build/local/lab/nodes/cli0/mnt /mnt/pfslab/local-bbbbbbbb" >"$B/cli0"
  echo "10.98.0.15 cli1 pfs-bbbbbb-cli1 /b/build/local/lab/nodes/cli1/mnt /mnt/pfslab/local-bbbbbbbb" >"$B/cli1"
}

nsrsh() { run env PFSLAB_NSRSH_HOSTS="$1" "$KIT/scripts/local/nsrsh" "${@:2}"; }

@test "nsrsh resolves a node name in its own lab instance, not in another checkout's" {
  nsrsh "$A" cli0 true
  assert_failure 2
  assert_output "[nsrsh] error: node cli0 (10.99.0.14): network namespace pfs-aaaaaa-cli0 is gone; run 'make lab-up'"
  nsrsh "$B" -n cli0 true
  assert_output "[nsrsh] error: node cli0 (10.98.0.14): network namespace pfs-bbbbbb-cli0 is gone; run 'make lab-up'"
}

@test "nsrsh refuses an address or name that only the other checkout's lab has" {
  nsrsh "$A" 10.98.0.14 true
  assert_failure 2
  assert_output "[nsrsh] error: host '10.98.0.14' is not a node of this local lab (its records: $A)"
  nsrsh "$A" cli1 true
  assert_output "[nsrsh] error: host 'cli1' is not a node of this local lab (its records: $A)"
}

@test "nsrsh with the records of a lab that is down says so in one line" {
  nsrsh "$BATS_TEST_TMPDIR/run/local-cccccccc/hosts" cli0 true
  assert_failure 2
  assert_output "[nsrsh] error: PFSLAB_NSRSH_HOSTS=$BATS_TEST_TMPDIR/run/local-cccccccc/hosts does not exist: that lab is not up ('make lab-up')"
}
