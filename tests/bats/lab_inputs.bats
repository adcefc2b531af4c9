#!/usr/bin/env bats
# Bad input to `make lab-up`, `make bench`, `make lab-down`: one clear line, exit
# status 2, and nothing half-built. Each test works in a throwaway copy of the kit
# tree (PFSLAB_ROOT), so a lab running in the real checkout is neither seen nor touched.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  KIT=$BATS_TEST_TMPDIR/kit
  mkdir -p "$KIT/labs"
  for entry in scripts families registry pfslab pyproject.toml reframe spack targets terraform .venv requirements.txt; do
    ln -s "$REPO/$entry" "$KIT/$entry"
  done
  cp "$REPO"/labs/*.yaml "$REPO/labs/schema.json" "$KIT/labs/"
  export PFSLAB_ROOT=$KIT
  [[ -x $REPO/.venv/bin/python ]] || skip "the kit's Python environment is missing: run 'make deps'"
}

# Nothing of a lab may appear: no state, no namespace of the test's own checkout. Only
# that checkout's namespace prefix is looked for (every namespace of a lab instance
# carries it, pfslab/names.py): CI runs a lab of its own beside these tests.
assert_nothing_built() {
  local lab=$1 prefix
  assert [ ! -e "$KIT/build/$lab" ]
  assert [ ! -e "$KIT/build/active-lab" ]
  prefix=$("$REPO/.venv/bin/python" -c 'import sys; from pathlib import Path; from pfslab import names as n; print(n.netns_prefix(n.instance_id(sys.argv[1], n.checkout_id(Path(sys.argv[2]).resolve()))))' "$lab" "$KIT")
  run bash -c "ip netns list 2>/dev/null | grep -F -- '$prefix-' || true"
  assert_output ""
}

@test "lab-up of an unknown lab names the labs that exist" {
  run "$KIT/scripts/lab" up nope
  assert_failure 2
  assert_output --regexp "^\[lab\] error: unknown lab 'nope'; labs that exist: .*local"
  assert_equal "${#lines[@]}" 1
  assert_nothing_built nope
}

# Derive a lab file from local.yaml with sed; fail the test if sed changed nothing
# (a valid lab file would really come up).
derive_lab() {
  local name=$1 expression=$2
  sed -e "$expression" -e "s/^name: local\$/name: $name/" "$REPO/labs/local.yaml" >"$KIT/labs/$name.yaml"
  run diff <(sed "s/^name: local\$/name: $name/" "$REPO/labs/local.yaml") "$KIT/labs/$name.yaml"
  assert_failure 1
}

@test "lab-up of a lab file with a bad field names the field" {
  derive_lab broken 's/^    pool_size: 2$/    pool_size: two/'
  run "$KIT/scripts/lab" up broken
  assert_failure 2
  assert_output --partial "labs/broken.yaml: filesystem.ceph.pool_size: 'two' is not of type 'integer'"
  assert_equal "${#lines[@]}" 1
  assert_nothing_built broken
}

@test "lab-up of a lab file with an unknown field lists the allowed ones" {
  derive_lab typo 's/^  mount: \/mnt\/pfslab\/local$/  mountpoint: \/mnt\/x/'
  run "$KIT/scripts/lab" up typo
  assert_failure 2
  assert_output --partial "filesystem.mountpoint: unknown field; allowed here: "
  assert_nothing_built typo
}

@test "bench with no lab up says to run make lab-up" {
  run "$KIT/scripts/bench"
  assert_failure 2
  assert_output "[bench] error: no lab is up; run 'make lab-up' first (LAB=local by default)"
  assert [ ! -e "$KIT/build/runs" ]
}

@test "bench with a bad MODE names it and what is allowed" {
  mkdir -p "$KIT/build/local"
  echo local >"$KIT/build/active-lab"
  echo '{"target": "local"}' >"$KIT/build/local/inventory.json"
  PFSLAB_MODE=fast run "$KIT/scripts/bench"
  assert_failure 2
  assert_output "[bench] error: MODE=fast is not allowed; allowed: quick, full"
  assert [ ! -e "$KIT/build/runs" ]
}

@test "lab-status with no lab up says so" {
  run "$KIT/scripts/lab" status
  assert_failure 2
  assert_output "[lab] error: no lab is up; run 'make lab-up' first"
}

@test "lab-down with no lab up has nothing to do" {
  run "$KIT/scripts/lab" down
  assert_success
  assert_output "[lab] no lab is up; nothing to take down"
}

@test "a LAB that is not a lab name is refused before it becomes a path" {
  # lab-down removes build/<lab>: a name like ../.. must never get that far.
  mkdir -p "$BATS_TEST_TMPDIR/victim/lab"
  echo keep >"$BATS_TEST_TMPDIR/victim/lab/file"
  for action in up down status calibrate; do
    run "$KIT/scripts/lab" "$action" "../../victim"
    assert_failure 2
    assert_output --regexp "^\[lab\] error: LAB=\.\./\.\./victim is not a lab name \(lower-case letters, digits"
    assert_equal "${#lines[@]}" 1
  done
  assert_equal "$(cat "$BATS_TEST_TMPDIR/victim/lab/file")" keep
  assert [ ! -e "$KIT/build" ]
}

@test "a tampered active-lab record is refused, not followed" {
  mkdir -p "$KIT/build" "$BATS_TEST_TMPDIR/victim"
  echo keep >"$BATS_TEST_TMPDIR/victim/file"
  echo "../../victim" >"$KIT/build/active-lab"
  run "$KIT/scripts/lab" down
  assert_failure 2
  assert_output --partial "error: LAB=../../victim is not a lab name"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/victim/file")" keep
}

@test "a second lab cannot come up beside the running one" {
  mkdir -p "$KIT/build"
  echo nss73-ha >"$KIT/build/active-lab"
  [[ -e $KIT/labs/nss73-ha.yaml ]] || derive_lab nss73-ha 's/^title: .*/title: stand-in/'
  [[ -c /dev/fuse && $(id -u) -eq 0 ]] || skip "needs root and /dev/fuse to get past the preflight"
  run "$KIT/scripts/lab" up local
  assert_failure 2
  assert_output --partial "lab nss73-ha is up; bring it down first ('make lab-down') or run with LAB=nss73-ha"
  assert [ ! -e "$KIT/build/local" ]
}

@test "lab-up without root says so before anything starts" {
  [[ $(id -u) -eq 0 ]] || skip "needs root to drop to another user"
  command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
  local dir=$KIT
  while [[ $dir != / ]]; do chmod a+rx "$dir"; dir=$(dirname "$dir"); done
  run setpriv --reuid=65534 --regid=65534 --clear-groups env PFSLAB_ROOT="$KIT" HOME=/tmp "$KIT/scripts/lab" up local
  assert_failure 2
  assert_output --regexp "needs root|run this as root"
  assert_nothing_built local
}

@test "lab-up without /dev/fuse says so before anything starts" {
  [[ $(id -u) -eq 0 ]] || skip "needs root to hide /dev/fuse in a private mount namespace"
  touch "$BATS_TEST_TMPDIR/not-a-device"
  run unshare --mount --propagation private bash -c \
    'mount --bind "$1" /dev/fuse && exec "$2" up local' _ "$BATS_TEST_TMPDIR/not-a-device" "$KIT/scripts/lab"
  assert_failure 2
  assert_output --partial "/dev/fuse is missing; the lab's ceph-fuse clients need FUSE"
  assert_nothing_built local
}

@test "make lab-up LAB=nope through the Makefile" {
  run make -s -C "$REPO" lab-up LAB=nope PFSLAB_ROOT="$KIT"
  assert_failure
  assert_output --partial "unknown lab 'nope'; labs that exist:"
  assert_nothing_built nope
}

@test "reframe -c reframe/ -r with no lab up fails and says which lab to bring up" {
  run env PFSLAB_ROOT="$KIT" RFM_CONFIG_FILES="$KIT/reframe/config/settings.py" \
    "$REPO/.venv/bin/reframe" -c "$KIT/reframe/" -r --nocolor
  assert_failure
  assert_output --partial "no lab is up: run 'make lab-up' first"
  refute_output --partial "Ran 0/0"
}

@test "reframe --dry-run --system <seed lab> writes that lab's job script with no lab up" {
  run env PFSLAB_ROOT="$KIT" RFM_CONFIG_FILES="$KIT/reframe/config/settings.py" \
    "$REPO/.venv/bin/reframe" -c "$KIT/reframe/" --dry-run --system pixstor-capex --nocolor \
    -n 'IOR.*%lab=pixstor-capex%workload=ior-n1%threads=16%'
  assert_success
  assert_output --partial "Ran 1/1 test case(s)"
  run find "$KIT/build/runs" -name rfm_job.sh -path '*pixstor-capex*'
  assert_output --regexp "rfm_job.sh$"
  # The JUnit report comes from the generated configuration, for a dry run too.
  run find "$KIT/build/runs" -name junit.xml
  assert_output --regexp "^$KIT/build/runs/[^/]+/[^/]+/junit.xml$"
}

@test "a dry run that fails leaves a junit.xml holding the error in its run directory" {
  rm "$KIT/.venv"
  mkdir -p "$KIT/.venv/bin"
  ln -s "$REPO/.venv/bin/pfslab" "$KIT/.venv/bin/pfslab"
  # A ReFrame that fails before it reports anything.
  printf '#!/bin/sh\necho "reframe: could not start" >&2\nexit 1\n' >"$KIT/.venv/bin/reframe"
  chmod +x "$KIT/.venv/bin/reframe"
  run "$KIT/scripts/dry-run" pixstor-capex
  assert_failure
  assert_output --partial "the dry run of pixstor-capex failed"
  run find "$KIT/build/runs/pixstor-capex" -name junit.xml
  assert_output --regexp "^$KIT/build/runs/pixstor-capex/[0-9TZ]+-dry/junit.xml$"
  run grep -cE '<error message="the dry run ended with exit status [1-9][0-9]* before ReFrame wrote its JUnit report' "$output"
  assert_output 1
}

@test "the kit's activate script points ReFrame at the kit whether or not a lab is up" {
  run grep -E "^export RFM_CONFIG_FILES='$REPO/reframe/config/settings.py'$" "$REPO/.venv/bin/activate"
  assert_success
}

@test "LAB, RUN, A and B reach the scripts as one word each through the Makefile, whatever they hold" {
  T=$BATS_TEST_TMPDIR
  run make -s -C "$REPO" lab-status LAB="nope || touch $T/pwned-lab" PFSLAB_ROOT="$KIT"
  assert_failure
  assert_output --partial "[lab] error: LAB=nope || touch $T/pwned-lab is not a lab name"
  run make -s -C "$REPO" lab-status LAB="x'; touch $T/pwned-quote; '" PFSLAB_ROOT="$KIT"
  assert_failure
  assert_output --partial "is not a lab name"
  run make -s -C "$REPO" report RUN="nope || touch $T/pwned-run" PFSLAB_ROOT="$KIT"
  assert_failure
  run make -s -C "$REPO" compare A="a || touch $T/pwned-a" B='b"' PFSLAB_ROOT="$KIT"
  assert_failure
  [ -z "$(find "$T" -maxdepth 1 -name 'pwned-*')" ]
}
