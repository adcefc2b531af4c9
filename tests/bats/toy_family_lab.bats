#!/usr/bin/env bats
# A new family's folder is enough for a local lab-up (issue 22): a copy of the
# checkout's tracked files plus families/toy/ (tests/fixtures/toy-family: a family.json
# and a role that does nothing) and its lab toy-local come up as network namespaces on a
# bridge of their own, and go down with nothing left. The plan and dry run of the same
# family are tests/unit/test_toy_family.py. Needs root and network namespaces (skipped
# otherwise, saying why). Bridge and subnet: PFSLAB_BRIDGE/PFSLAB_SUBNET when set, else
# pfslab9 and 10.79.0.0/24, which no other lab of the kit uses.

load helpers

setup() {
  [[ $EUID -eq 0 ]] || skip "a local lab-up needs root (network namespaces, a bridge); this is uid $EUID"
  local probe=pfslab-toy-probe-$$
  ip netns add "$probe" 2>/dev/null || skip "cannot make network namespaces here (ip netns add failed)"
  ip netns delete "$probe"
  command -v terraform >/dev/null || skip "terraform is not installed (make deps-test installs it)"
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "$KIT/.venv is missing: run 'make deps'"
  BRIDGE=${PFSLAB_BRIDGE:-pfslab9}
  SUBNET=${PFSLAB_SUBNET:-10.79.0.0/24}
  COPY=$BATS_TEST_TMPDIR/kit
  mkdir -p "$COPY"
  git -C "$KIT" ls-files -z | tar -C "$KIT" --null -T - -cf - | tar -C "$COPY" -xf -
  ln -s "$KIT/.venv" "$COPY/.venv"
  mkdir "$COPY/families/toy"
  cp -p "$KIT/tests/fixtures/toy-family/family.json" "$KIT/tests/fixtures/toy-family/role" "$COPY/families/toy/"
  cp "$KIT/tests/fixtures/toy-family/toy-example.yaml" "$KIT/tests/fixtures/toy-family/toy-local.yaml" "$COPY/labs/"
  PFSLAB_ROOT=$COPY "$COPY/.venv/bin/pfslab" registry schema --write >/dev/null
}

lab() {
  env -u PFSLAB_ROOT -u PFSLAB_LAB PFSLAB_BRIDGE="$BRIDGE" PFSLAB_SUBNET="$SUBNET" timeout 600 "$COPY/scripts/lab" "$@"
}

teardown() {
  # A failed test still takes its lab down.
  [[ -n ${COPY:-} && -d $COPY/build/toy-local ]] || return 0
  lab down toy-local >&3 2>&1 || true
}

@test "the toy family's lab comes up with its no-op role and goes down leaving nothing" {
  run lab up toy-local
  assert_success
  assert_output --partial "lab toy-local is up and healthy"
  # Its namespaces ran the toy role: the client's mount point is the host's view.
  local namespaces ns mount
  namespaces=$(jq -r '.local.netns[]' "$COPY/build/toy-local/inventory.json")
  [[ -n $namespaces ]]
  for ns in $namespaces; do ip netns list | grep -qw -- "$ns"; done
  ip link show "$BRIDGE" >/dev/null
  mount=$(jq -r '.filesystem.mount' "$COPY/build/toy-local/inventory.json")
  findmnt "$mount" >/dev/null
  run lab down toy-local
  assert_success
  assert_output --partial "lab toy-local is down"
  assert_output --partial "nothing is left"
  # Checked here too, not only by lab-down's own sweep.
  for ns in $namespaces; do run bash -c "ip netns list | grep -w -- '$ns'"; assert_failure; done
  run ip link show "$BRIDGE"
  assert_failure
  run findmnt "$mount"
  assert_failure
  [[ ! -e $COPY/build/toy-local ]]
}
