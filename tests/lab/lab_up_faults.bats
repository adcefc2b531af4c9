#!/usr/bin/env bats
# A lab-up that fails at each of its steps in turn, for real: a node's network (the
# last node's veth refused, after its namespace was made: what a bad interface name
# did), a role's start (ceph-mds exits 1), the health wait (the cluster never reports
# HEALTH_OK) and the calibration (fio fails). Each time a plain `make lab-down` (no
# LAB) must find the lab and leave nothing: namespaces, links, mounts, processes,
# /run/pfslab, cgroups, the state directory.
# The faults come from command shims on PATH (the kit's own code runs unchanged).
# `make test-lab` runs it before local_lab.bats; it needs root, /dev/fuse and `make deps`.

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file
# shellcheck source=scripts/lib/ere.sh
source "$BATS_TEST_DIRNAME/../../scripts/lib/ere.sh"
load ../lib/timed

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
# A copy of the local lab that gives up waiting for health after 5 s (the file's 60 s
# would make the health-wait test wait twice that), written into this checkout for
# the tests only.
LAB=local-faults

setup_file() {
  [[ $(id -u) -eq 0 ]] || { skip_file "the local lab needs root"; return 0; }
  [[ -c /dev/fuse ]] || { skip_file "the local lab needs /dev/fuse"; return 0; }
  if [[ -s $REPO/build/active-lab ]] || ip link show pfslab0 >/dev/null 2>&1; then
    echo "# a lab is up in $REPO or on bridge pfslab0; this test brings up its own and refuses to share" >&3
    return 1
  fi
  cat >"$REPO/labs/$LAB.yaml" <<EOF
# Written by tests/lab/lab_up_faults.bats for its run; removed by its teardown.
name: $LAB
extends: local
title: the local lab, failing on purpose
targets:
  local:
    ready_timeout_s: 5
EOF
  export INSTANCE=$BATS_FILE_TMPDIR/instance.json
  "$REPO/.venv/bin/pfslab" lab show "$LAB" --instance >"$INSTANCE"
  echo "# checkout $REPO (id $(jq -r .instance.checkout "$INSTANCE"))" >&3
  REAL_IP=$(command -v ip)
  export REAL_IP
}

teardown_file() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || return 0
  "$REPO/scripts/lab" down "$LAB" >/dev/null 2>&1 || true
  rm -f "$REPO/labs/$LAB.yaml"
}

setup() {
  skip_when_file_skipped
  SHIMS=$BATS_TEST_TMPDIR/shims
  mkdir -p "$SHIMS"
}

field() { jq -r "$1" "$INSTANCE"; }

# Everything of the lab instance that could be left, one per line (empty: nothing).
what_is_left() {
  local prefix run mount cgroup dir veth
  prefix="$(field .instance.netns_prefix)-" run=$(field .instance.run_root)
  mount=$(field .filesystem.mount) cgroup=$(field .instance.cgroup) dir=$REPO/build/$LAB
  ip netns list | awk -v p="$prefix" 'index($1, p) == 1 {print "namespace " $1}'
  for veth in $(field '.instance.nodes[].veth'); do
    ip link show "$veth" >/dev/null 2>&1 && echo "link $veth"
  done
  ip link show "$(field .targets.local.bridge)" >/dev/null 2>&1 && echo "bridge $(field .targets.local.bridge)"
  findmnt -rn -o TARGET | awk -v s="$dir/" -v m="$mount" 'index($0, s) == 1 || $0 == m {print "mount " $0}'
  pgrep -af -- "$(ere_quote "$dir/")|$(ere_quote "$run/")" | grep -v pgrep | sed 's/^/process /' || true
  [[ ! -e $run ]] || echo "run root $run"
  [[ ! -e /sys/fs/cgroup/$cgroup && ! -e /sys/fs/cgroup/cpu/$cgroup ]] || echo "cgroup $cgroup"
  [[ ! -e $dir ]] || echo "state $dir"
  [[ ! -s $REPO/build/active-lab ]] || echo "recorded lab $(cat "$REPO/build/active-lab")"
  [[ ! -d $mount ]] || echo "directory $mount"
}

# lab-up with the shims first on PATH: it must fail, having made part of the lab.
lab_up_fails() {
  run timed "lab-up failing at $1" env PATH="$SHIMS:$PATH" "${@:2}" make -C "$REPO" --no-print-directory lab-up LAB="$LAB"
  echo "$output" | tail -n 5 >&3
  assert_failure
  # Something was made: the recorded lab, and (but for the earliest failures) a namespace.
  assert [ -s "$REPO/build/active-lab" ]
}

down_leaves_nothing() {
  run timed "lab-down after a failed lab-up ($1)" make -C "$REPO" --no-print-directory lab-down
  echo "$output" | tail -n 3 >&3
  assert_success
  assert_output --partial "lab $LAB is down"
  run what_is_left
  assert_output ""
}

@test "a node's network fails after its namespace was made: lab-down removes the namespace no state holds" {
  local last
  last=$(field '.instance.nodes | to_entries | last | .value.veth')
  # The last node's veth is refused as the kernel refused a bad name.
  cat >"$SHIMS/ip" <<EOF
#!/bin/bash
if [[ " \$* " == *" link add $last type veth "* ]]; then
  echo 'Error: argument "$last" is wrong: "dev" not a valid ifname' >&2
  exit 255
fi
exec $REAL_IP "\$@"
EOF
  chmod +x "$SHIMS/ip"
  lab_up_fails "a node's network"
  # Terraform wraps its error lines.
  run bash -c 'tr "\n" " " <<<"$1" | tr -s " "' _ "$output"
  assert_output --partial "not a valid ifname"
  assert [ -e "/run/netns/$(field '.instance.nodes | to_entries | last | .value.netns')" ]
  down_leaves_nothing "a node's network"
}

@test "a role's start fails (ceph-mds exits 1): lab-down leaves nothing" {
  printf '#!/bin/sh\necho "ceph-mds: refusing to start (test shim)" >&2\nexit 1\n' >"$SHIMS/ceph-mds"
  chmod +x "$SHIMS/ceph-mds"
  lab_up_fails "a role's start"
  assert_output --partial "terraform apply failed"
  down_leaves_nothing "a role's start"
}

@test "the health wait runs out (the cluster never says HEALTH_OK): lab-down leaves nothing" {
  local real
  real=$(command -v ceph)
  cat >"$SHIMS/ceph" <<EOF
#!/bin/bash
if [[ " \$* " == *" status -f json"* ]]; then
  $real "\$@" | jq -c '.health.status = "HEALTH_WARN"'
  exit "\${PIPESTATUS[0]}"
fi
exec $real "\$@"
EOF
  chmod +x "$SHIMS/ceph"
  lab_up_fails "the health wait"
  assert_output --partial "is not healthy after 5s"
  down_leaves_nothing "the health wait"
}

@test "the calibration fails (fio exits 1): lab-down leaves nothing" {
  printf '#!/bin/sh\necho "fio: failing on purpose (test shim)" >&2\nexit 1\n' >"$SHIMS/fio"
  chmod +x "$SHIMS/fio"
  lab_up_fails "the calibration" PFSLAB_TOOL_PATH="$SHIMS"
  assert_output --partial "calibrat"
  down_leaves_nothing "the calibration"
}
