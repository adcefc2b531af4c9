#!/usr/bin/env bats
# Two checkouts of the kit run the local lab side by side, for real: a clone of this
# working tree gets its own .venv (make deps), is refused on this checkout's bridge
# and subnet in one line naming this checkout, comes up on its own (BRIDGE=, SUBNET=,
# as the README says), each `make bench` runs on its own clients only, and each
# `make lab-down` removes its own lab and nothing of the other's.
# `make test-lab` runs it after local_lab.bats; it needs root, /dev/fuse and `make deps`.
# The tests run in order and share the two labs; teardown_file takes both down.

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file
# shellcheck source=scripts/lib/ere.sh
source "$BATS_TEST_DIRNAME/../../scripts/lib/ere.sh"

A=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
LAB=local
# The second checkout's bridge and subnet (README "Two checkouts on one host").
B_BRIDGE=pfslab1
B_SUBNET=10.98.0.0/24
# One small test: two IOzone threads in cluster mode, one per client node, started
# through nsrsh (RSH) ($$: make passes REFRAME_ARGS on).
ONE_TEST="-n 'IOzone_.*%lab=local%workload=iozone-seq%threads=2%'"

setup_file() {
  [[ $(id -u) -eq 0 ]] || { skip_file "the local lab needs root"; return 0; }
  [[ -c /dev/fuse ]] || { skip_file "the local lab needs /dev/fuse"; return 0; }
  if [[ -s $A/build/active-lab ]] || ip link show pfslab0 >/dev/null 2>&1 || ip link show "$B_BRIDGE" >/dev/null 2>&1; then
    echo "# a lab is up in $A or on bridge pfslab0/$B_BRIDGE; this test brings up its own two and refuses to share" >&3
    return 1
  fi
  # A clone of the working tree as it is (uncommitted changes too), with its own
  # environment: its `pfslab` must import its own tree, not this one's.
  export B=$BATS_FILE_TMPDIR/clone
  git clone -q "$A" "$B"
  git -C "$A" ls-files -z -co --exclude-standard | tar -C "$A" --null -T - -cf - | tar -C "$B" -xf -
  "$B/scripts/deps" demo >"$BATS_FILE_TMPDIR/deps.log" 2>&1 || { tail -n 20 "$BATS_FILE_TMPDIR/deps.log" >&3; return 1; }
}

setup() { skip_when_file_skipped; }

teardown_file() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || return 0
  [[ -n ${B:-} && -x $B/scripts/lab ]] && "$B/scripts/lab" down "$LAB" >/dev/null 2>&1
  "$A/scripts/lab" down "$LAB" >/dev/null 2>&1 || true
}

# A checkout's lab instance, as its lab-up recorded it (build/local/lab.json).
field() { jq -r "$2" "$1/build/$LAB/lab.json"; }
namespaces() { ip netns list | awk -v p="$(field "$1" .instance.netns_prefix)-" 'index($1, p) == 1 {print $1}' | sort; }
# The checkout's daemons (every one runs with its state under the checkout's build/).
daemons() { pgrep -f -- "$(ere_quote "$1/build/$LAB/lab/")" | sort; }
newest_run() { find "$1/build/runs/$LAB" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1; }

@test "the clone's pfslab command is its own tree's" {
  # From / : python -c would otherwise import ./pfslab of the current directory.
  run bash -c 'cd / && "$1/.venv/bin/python" -c "import pfslab.instance as i; print(i.__file__)"' _ "$B"
  assert_success
  assert_output "$B/pfslab/instance.py"
  run bash -c 'cd / && env -u PFSLAB_ROOT "$1/.venv/bin/pfslab" lab show local --instance | jq -r .instance.root' _ "$B"
  assert_output "$(realpath "$B")"
}

@test "the first checkout's lab comes up on the lab file's bridge and subnet" {
  run make -C "$A" --no-print-directory lab-up LAB=$LAB
  assert_success
  assert_output --partial "lab $LAB is up and healthy"
  assert_equal "$(field "$A" .targets.local.bridge) $(field "$A" .network.subnet)" "pfslab0 10.99.0.0/24"
}

@test "the second checkout on the same bridge is refused in one line naming the first, and nothing of it is made" {
  run make -C "$B" --no-print-directory lab-up LAB=$LAB
  assert_failure
  assert_line "[lab] error: bridge pfslab0 is used by lab local of the checkout $A; give this lab another: make lab-up LAB=local BRIDGE=pfslab1 SUBNET=10.98.0.0/24 (README: Two checkouts on one host)"
  assert [ ! -e "$B/build/$LAB" ]
  assert_equal "$(find /run/pfslab -mindepth 1 -maxdepth 1 | wc -l)" 1
  # Another bridge but an overlapping subnet: refused too.
  run make -C "$B" --no-print-directory lab-up LAB=$LAB BRIDGE=$B_BRIDGE SUBNET=10.99.0.0/16
  assert_failure
  assert_line --partial "[lab] error: subnet 10.99.0.0/16 overlaps 10.99.0.0/24 of lab local of the checkout $A"
  run ip link show "$B_BRIDGE"
  assert_failure
}

@test "the second checkout comes up beside the first with BRIDGE and SUBNET; nothing of the two is shared" {
  run make -C "$B" --no-print-directory lab-up LAB=$LAB BRIDGE=$B_BRIDGE SUBNET=$B_SUBNET
  assert_success
  assert_output --partial "lab $LAB is up and healthy"
  assert_equal "$(field "$B" .targets.local.bridge) $(field "$B" .network.subnet)" "$B_BRIDGE $B_SUBNET"
  for key in .instance.netns_prefix .instance.run_root .instance.cgroup .filesystem.mount; do
    refute [ "$(field "$A" "$key")" == "$(field "$B" "$key")" ]
  done
  assert_equal "$(namespaces "$A" | wc -l)" 6
  assert_equal "$(namespaces "$B" | wc -l)" 6
  # Each host view of the file system is mounted, at its own path.
  findmnt -rn --mountpoint "$(field "$A" .filesystem.mount)" >/dev/null
  findmnt -rn --mountpoint "$(field "$B" .filesystem.mount)" >/dev/null
  # The nodes' addresses are in each lab's own subnet, on its own bridge.
  run ip netns exec "$(namespaces "$B" | grep -- -cli0)" ip -4 -o addr show eth0
  assert_output --partial "inet 10.98.0.14/24"
  run ip netns exec "$(namespaces "$A" | grep -- -cli0)" ip -4 -o addr show eth0
  assert_output --partial "inet 10.99.0.14/24"
  assert [ -n "$(daemons "$A")" ]
  assert [ -n "$(daemons "$B")" ]
  assert_equal "$(comm -12 <(daemons "$A") <(daemons "$B"))" ""
  # A repairing lab-up without BRIDGE and SUBNET keeps the ones the lab came up with.
  run make -C "$B" --no-print-directory lab-up LAB=$LAB
  assert_success
  assert_output --partial "nothing to repair"
  assert_equal "$(field "$B" .targets.local.bridge) $(field "$B" .network.subnet)" "$B_BRIDGE $B_SUBNET"
  # Without its lab's records named, nsrsh refuses to guess between the two labs.
  run env -u PFSLAB_NSRSH_HOSTS "$A/scripts/local/nsrsh" cli0 true
  assert_failure 2
  assert_output --partial "2 local labs are up"
}

# Run one small test in a checkout; print its run directory. The verdict may be FAIL
# (scripts/bench exits 1, which make reports as "Error 1"): two labs share this
# machine's disk, and the figures are judged against a calibration made while only one
# ran. What is checked is where the threads ran.
bench_one() {
  local out=$BATS_TEST_TMPDIR/bench.out
  if ! make -C "$1" --no-print-directory bench REFRAME_ARGS="$ONE_TEST" >"$out" 2>&1 &&
    ! grep -q '\] Error 1$' "$out" || ! grep -q '^verdict: ' "$out"; then
    tail -n 30 "$BATS_TEST_TMPDIR/bench.out" >&3
    return 1
  fi
  newest_run "$1"
}

# What the threads of a checkout's bench were given and where nsrsh puts a client for them.
assert_own_clients() {
  local kit=$1 subnet_prefix=$2 run=$3 hosts
  # The job's thread list (in the output, or the stage of a failed test) names the lab's own clients only.
  hosts=$(find "$run/output" "$run/stage" -name 'threadlist.2' -exec cat {} + 2>/dev/null | awk '{print $1}' | sort -u | paste -sd ' ')
  assert_equal "$hosts" "${subnet_prefix}14 ${subnet_prefix}15"
  # The job environment points nsrsh at this lab instance's records, and the threads
  # report back to this lab's bridge address.
  run jq -r '.runs[].testcases[].env_vars.PFSLAB_NSRSH_HOSTS' "$run/report.json"
  assert_output "$(field "$kit" .instance.run_root)/hosts"
  run grep -c -- "-+h ${subnet_prefix}1'" "$run/report.json"
  refute_output 0
  # nsrsh with that environment lands in the lab's own client namespace.
  run env PFSLAB_NSRSH_HOSTS="$(field "$kit" .instance.run_root)/hosts" "$kit/scripts/local/nsrsh" cli1 \
    'ip -4 -o addr show eth0; stat -f -c %T .'
  assert_output --partial "inet ${subnet_prefix}15/"
}

@test "each checkout's make bench runs on its own clients" {
  local run_a run_b
  run_a=$(bench_one "$A")
  run_b=$(bench_one "$B")
  assert_own_clients "$A" 10.99.0. "$run_a"
  assert_own_clients "$B" 10.98.0. "$run_b"
  # Both wrote and read through their own file system: figures in each run.
  for run in "$run_a" "$run_b"; do
    sed 's/^/# /' "$run/verdict.txt" >&3
    assert [ "$(jq '[.rows[] | select(.measured != null)] | length' "$run/verdict.json")" -gt 0 ]
  done
}

@test "the first checkout's lab-down removes its lab only: the second stays healthy, mounted, its daemons untouched" {
  local before prefix_a run_a mount_a
  before=$(daemons "$B")
  prefix_a=$(field "$A" .instance.netns_prefix) run_a=$(field "$A" .instance.run_root) mount_a=$(field "$A" .filesystem.mount)
  run make -C "$A" --no-print-directory lab-down
  assert_success
  assert_output --partial "nothing is left"
  assert_equal "$(ip netns list | grep -c "^$prefix_a-")" 0
  run ip link show pfslab0
  assert_failure
  assert [ ! -e "$run_a" ]
  assert [ ! -e "$mount_a" ]
  assert_equal "$(daemons "$B")" "$before"
  assert_equal "$(namespaces "$B" | wc -l)" 6
  run make -C "$B" --no-print-directory lab-status
  assert_success
  assert_output --partial "HEALTH_OK"
  timeout 10 stat -f "$(field "$B" .filesystem.mount)" >/dev/null
  timeout 10 touch "$(field "$B" .filesystem.mount)/still-here"
  rm -f "$(field "$B" .filesystem.mount)/still-here"
}

@test "the second checkout's lab-down leaves nothing of either lab" {
  local prefix_b run_b mount_b
  prefix_b=$(field "$B" .instance.netns_prefix) run_b=$(field "$B" .instance.run_root) mount_b=$(field "$B" .filesystem.mount)
  run make -C "$B" --no-print-directory lab-down
  assert_success
  assert_output --partial "nothing is left"
  assert_equal "$(ip netns list | grep -c "^$prefix_b-")" 0
  run ip link show "$B_BRIDGE"
  assert_failure
  assert [ ! -e "$run_b" ]
  assert [ ! -e "$mount_b" ]
  assert_equal "$(findmnt -rn | grep -c -e "$A/build/" -e "$B/build/" -e /mnt/pfslab)" 0
  assert_equal "$(pgrep -c -f -- "$(ere_quote "$A/build/$LAB/")|$(ere_quote "$B/build/$LAB/")" || true)" 0
}
