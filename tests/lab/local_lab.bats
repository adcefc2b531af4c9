#!/usr/bin/env bats
# The embedded local lab for real: up (and calibrated), idempotent, repaired, the demo
# PASS on thresholds made on this machine, baselines that hold only on their own
# machine, a starved lab that FAILs, faults during a run (MDS, OSD) that end it or mark
# it, and a bench killed part way that lab-down still clears.
# `make test-lab` (and .ci/run) runs it; it needs root, /dev/fuse and `make deps`.
# The tests run in order and share one lab; teardown_file always takes it down.

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file
# shellcheck source=scripts/lib/ere.sh
source "$BATS_TEST_DIRNAME/../../scripts/lib/ere.sh"

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
LAB=local

setup_file() {
  [[ $(id -u) -eq 0 ]] || { skip_file "the local lab needs root"; return 0; }
  [[ -c /dev/fuse ]] || { skip_file "the local lab needs /dev/fuse"; return 0; }
  if [[ -s $REPO/build/active-lab ]]; then
    echo "# a lab is already up in $REPO; this test brings up its own and refuses to share" >&3
    return 1
  fi
  # Namespaces, run root and mount path are this checkout's lab instance's; the bridge
  # and subnet are the machine's. Another checkout's lab on the same ones would make
  # lab-up refuse (tests/lab/two_checkouts.bats tests that refusal).
  local bridge resolved problems
  resolved=$BATS_FILE_TMPDIR/lab.json
  # The bridge and subnet lab-up is given (PFSLAB_BRIDGE, PFSLAB_SUBNET), as it resolves them.
  "$REPO/.venv/bin/pfslab" lab show "$LAB" --instance ${PFSLAB_BRIDGE:+--bridge "$PFSLAB_BRIDGE"} \
    ${PFSLAB_SUBNET:+--subnet "$PFSLAB_SUBNET"} >"$resolved"
  bridge=$(jq -r .targets.local.bridge "$resolved")
  if problems=$("$REPO/.venv/bin/pfslab" lab collisions "$resolved") && ! ip link show "$bridge" >/dev/null 2>&1; then
    return 0
  fi
  echo "# another lab is up on this machine's bridge $bridge or subnet: ${problems:-bridge $bridge exists}; take it down there with 'make lab-down' first" >&3
  return 1
}

# This checkout's lab instance (pfslab/instance.py), as its lab-up recorded it.
instance() { jq -r ".instance.$1" "$REPO/build/$LAB/lab.json"; }

setup() { skip_when_file_skipped; }

teardown_file() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || return 0
  stop_ps_sampler
  "$REPO/scripts/throttle" off >/dev/null 2>&1 || true
  "$REPO/scripts/lab" down "$LAB" >/dev/null 2>&1 || true
}

# Run a command, then print how long it took; the command's exit status is kept.
elapsed_of() {
  local start=$SECONDS rc=0
  "$@" || rc=$?
  echo "elapsed $((SECONDS - start))"
  return "$rc"
}

# Every process's command line, every 0.2 s, while the lab comes up: a secret passed
# as an argument (visible to every user in `ps`) would be in this file.
ps_capture() { echo "$BATS_FILE_TMPDIR/ps-during-lab-up.txt"; }
start_ps_sampler() {
  local capture
  capture=$(ps_capture)
  : >"$capture"
  (while :; do ps -ww -eo args >>"$capture"; sleep 0.2; done) >/dev/null 2>&1 3>&- &
  echo $! >"$BATS_FILE_TMPDIR/ps-sampler.pid"
}
stop_ps_sampler() {
  [[ -s ${BATS_FILE_TMPDIR:-}/ps-sampler.pid ]] || return 0
  kill "$(cat "$BATS_FILE_TMPDIR/ps-sampler.pid")" 2>/dev/null || true
  rm -f "$BATS_FILE_TMPDIR/ps-sampler.pid"
}

newest_run() { find "$REPO/build/runs/$LAB" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1; }

# Benchmark processes anywhere on this machine (the lab's nodes are its namespaces).
benchmark_processes() { pgrep -af '(^|/)(ior|mdtest|fio|iozone|lmp|io_shell|orted) ' | grep -v pgrep || true; }

# A subset that runs in about half a minute: the baselines, the passing runs and the
# starved run all measure these same figures.
SUBSET=(-n 'IOzone_.*%lab=local%workload=iozone-seq%threads=2%' -n 'Fio_.*%lab=local%workload=fio-rand4k%threads=2%')

@test "lab-up reaches HEALTH_OK in at most 60 s, then calibrates its thresholds on this machine" {
  start_ps_sampler
  run elapsed_of "$REPO/scripts/lab" up "$LAB"
  stop_ps_sampler
  assert_success
  echo "$output" | grep -E 'healthy in|calibrat|seq-write|elapsed' | sed 's/^/# /' >&3
  healthy=$(grep -oE 'up and healthy in [0-9]+ s' <<<"$output" | grep -oE '[0-9]+')
  assert [ "$healthy" -le 60 ]
  assert_output --regexp "seq-write: write [0-9.]+ MiB/s \(of [0-9.]+, [0-9.]+, [0-9.]+\)"
  elapsed=$(grep -o 'elapsed [0-9]*' <<<"$output" | cut -d' ' -f2)
  assert [ "$elapsed" -le 150 ]
  run jq -r '.rounds, (.probes | keys | join(" ")), .machine.id' "$REPO/build/$LAB/calibration.json"
  assert_line --index 0 3
  # Every probe of the policy (reframe/references/policy.yaml), none missing.
  assert_line --index 1 "$("$REPO/.venv/bin/python" -c 'from pfslab import calibration; print(" ".join(sorted(p.id for p in calibration.probes())))')"
  assert_line --regexp '^host-[0-9a-f]{12}$'
  run "$REPO/scripts/lab" status "$LAB"
  assert_success
  assert_output --partial "ceph: HEALTH_OK"
  assert_equal "$(findmnt -rn -t fuse.ceph-fuse | grep -c "$REPO/build/$LAB/lab/nodes/cli")" 2
}

@test "secrets after lab-up: keyrings 600 and root's, on the nodes that use them only, no key ever in ps" {
  lab=$REPO/build/$LAB/lab
  inv=$REPO/build/$LAB/inventory.json
  mapfile -t keyrings < <(find "$lab" -type f \( -name '*keyring*' -o -name beegfs.auth \) | sort)
  echo "# ${#keyrings[@]} keyrings under build/$LAB/lab" >&3
  assert [ "${#keyrings[@]}" -ge 10 ]
  for k in "${keyrings[@]}"; do
    mode=$(stat -c '%a %U' "$k")
    [[ $mode == "600 root" || $mode == "400 root" ]] || fail "$k is mode/owner $mode, not 600 (or 400) root"
  done
  # Which node holds which key: mon. and client.admin on the monitor only, the OSD
  # bootstrap key on OSD nodes, the file system's own key on clients.
  mon=$lab/nodes/mon0
  grep -qx '\[mon\.\]' "$mon/cluster/ceph.mon.keyring"
  grep -qx '\[client\.admin\]' "$mon/cluster/ceph.client.admin.keyring"
  for node in $(jq -r '.nodes[] | select(.roles | index("ceph-osd")) | .name' "$inv"); do
    run grep -rlE '^\[(mon\.|client\.admin|client\.pfslab)\]' "$lab/nodes/$node"
    assert_output ""
    grep -qx '\[client\.bootstrap-osd\]' "$lab/nodes/$node/cluster/ceph.client.bootstrap-osd.keyring"
  done
  for node in $(jq -r '.clients[]' "$inv"); do
    run grep -rlE '^\[(mon\.|client\.admin|client\.bootstrap-[a-z]+|osd\.[0-9]+)\]' "$lab/nodes/$node"
    assert_output ""
    run ls "$lab/nodes/$node/cluster"
    assert_output "ceph.client.pfslab.keyring
ceph.conf"
  done
  # The clients mount with that key, whose caps reach the file system only.
  assert_equal "$(pgrep -fc 'ceph-fuse .*-n client\.pfslab ')" 2
  run "$REPO/scripts/local/node-exec" "$(jq -r '.local.netns.mon0' "$inv")" "$mon/node.json" \
    sh -c "ceph -c '$mon/cluster/ceph.conf' -k '$mon/cluster/ceph.client.admin.keyring' -n client.admin auth get client.pfslab -f json 2>/dev/null | jq -cS '.[0].caps'"
  assert_output '{"mds":"allow rw","mon":"allow r","osd":"allow rw tag cephfs data=cephfs"}'
  # No key was ever on a command line while the lab came up.
  mapfile -t keys < <(grep -hoP '^\s*key = \K\S+' "${keyrings[@]}" | sort -u)
  samples=$(grep -c '^COMMAND$' "$(ps_capture)" || true)
  echo "# ${#keys[@]} distinct keys; $samples ps samples taken during lab-up" >&3
  assert [ "${#keys[@]}" -ge 8 ]
  assert [ "$samples" -ge 100 ]
  run grep -cF -f <(printf '%s\n' "${keys[@]}") "$(ps_capture)"
  assert_output 0
  # Nor in what Terraform keeps (state, logs, inventory) or in the daemons' logs.
  run grep -rlF -f <(printf '%s\n' "${keys[@]}") "$REPO/build/$LAB"/*.log "$REPO/build/$LAB"/*.tfstate* \
    "$REPO/build/$LAB/inventory.json" "$lab/logs"
  assert_output ""
}

@test "a second lab-up changes nothing and keeps the calibration" {
  before=$(jq -r .measured_at "$REPO/build/$LAB/calibration.json")
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "terraform: Apply complete! Resources: 0 added, 0 changed, 0 destroyed."
  assert_output --partial "nothing to repair"
  assert_output --partial "calibration of lab $LAB kept from $before"
  refute_output --partial "repairing"
  assert_equal "$(jq -r .measured_at "$REPO/build/$LAB/calibration.json")" "$before"
}

@test "after an OSD daemon is killed, lab-up repairs the lab" {
  pidfile=$(instance run_root)/osd1/ceph-osd.1.pid
  assert [ -s "$pidfile" ]
  kill "$(cat "$pidfile")"
  sleep 2
  run "$REPO/scripts/lab" status "$LAB"
  assert_failure
  assert_output --partial "ceph-osd.1: not running"
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "repairing ceph-osd on osd1"
  assert_output --partial "HEALTH_OK"
}

# The demo (make demo, the README's main job: one case of every tool), not the whole
# quick suite: make smoke runs every job of every lab with the real tools and parses
# each output, so what the full suite adds here is its length (15 min of CI's 2 cores).
@test "the demo PASSes on thresholds calibrated on this machine, with a progress line per test" {
  PFSLAB_MODE=quick run "$REPO/scripts/bench" --demo
  echo "$output" | grep -E '^\[bench\] \([0-9]+/[0-9]+\) (ok|FAIL|skip)|^verdict:' | sed 's/^/# /' >&3
  run_dir=$(newest_run)
  assert [ -s "$run_dir/report.json" ]
  assert [ -s "$run_dir/provenance.json" ]
  assert [ -s "$run_dir/calibration.json" ]
  assert [ -s "$run_dir/reframe.out" ]
  total=$(jq '[.runs[].testcases[]] | length' "$run_dir/report.json")
  # A start line and an end line for every test, n/N, and the estimate of what is left.
  assert_equal "$(grep -cE '^\[bench\] \([0-9]+/'"$total"'\) start ' <<<"$output")" "$total"
  assert_equal "$(grep -cE '^\[bench\] \([0-9]+/'"$total"'\) (ok|FAIL|skip|ERROR) ' <<<"$output")" "$total"
  assert_output --regexp "\[bench\] \(1/$total\) (ok|skip) .* [0-9]+ left, about "
  run jq -r '.summary.overall' "$run_dir/verdict.json"
  assert_output "pass"
  # Figures that ran were judged by the calibration; a missing tool is a skip with its
  # reason, never a pass; so is a seed's workload that needs another file system.
  run jq -r '[.rows[] | select(.verdict == "pass")] | length' "$run_dir/verdict.json"
  refute_output "0"
  run jq -r '.rows[] | select(.verdict == "pass") | .basis' "$run_dir/verdict.json"
  for basis in "${lines[@]}"; do assert_regex "$basis" "^calibrated on this machine: floor [0-9]+% of the lab's own "; done
  run jq -r '.rows[] | select(.verdict == "skip") | .reason' "$run_dir/verdict.json"
  for reason in "${lines[@]}"; do
    assert_regex "$reason" "is not installed|runs on [a-z, ]+ only; lab $LAB is "
  done
}

@test "a baseline holds on the machine it was measured on, and only there" {
  refs=$BATS_FILE_TMPDIR/references
  mkdir -p "$refs"
  PFSLAB_REFERENCES_DIR=$refs REPEAT=3 run "$REPO/scripts/baseline" "${SUBSET[@]}"
  assert_success
  assert_output --regexp "local.yaml: 4 baseline references from 3 runs"
  machine=$(jq -r .machine.id "$(newest_run)/provenance.json")
  assert_equal "$(grep -c "machine: $machine" "$refs/local.yaml")" 4
  PFSLAB_REFERENCES_DIR=$refs run "$REPO/scripts/bench" "${SUBSET[@]}"
  echo "$output" | grep -E '^verdict:' | sed 's/^/# same machine: /' >&3
  assert_success
  assert_output --partial "verdict: PASS  (4 pass, 0 fail, 0 skipped, 0 without reference)"
  run jq -r '[.rows[] | select(.basis | startswith("baseline on machine '"$machine"'"))] | length' "$(newest_run)/verdict.json"
  assert_output 4
  # The same lab on one CPU is another machine to the kit: the baseline steps aside and
  # the lab's own calibration judges (the verdict does not depend on that baseline).
  PFSLAB_REFERENCES_DIR=$refs run taskset -c 0 "$REPO/scripts/bench" "${SUBSET[@]}"
  echo "$output" | grep -E '^verdict:' | sed 's/^/# on one CPU: /' >&3
  assert_success
  assert_output --partial "verdict: PASS  (4 pass, 0 fail, 0 skipped, 0 without reference)"
  run jq -r '.rows[] | .basis' "$(newest_run)/verdict.json"
  for basis in "${lines[@]}"; do
    assert_regex "$basis" "^no baseline for this machine \(the one in the references file was measured on $machine\); calibrated on this machine"
  done
}

@test "with the OSDs starved of CPU, the figures fail their floors, and the pre-run check fails the run at once" {
  run "$REPO/scripts/throttle" on 5
  assert_success
  PFSLAB_NO_PRECHECK=1 run "$REPO/scripts/bench" "${SUBSET[@]}"
  status_bench=$status
  echo "$output" | grep -E '^verdict:' | sed 's/^/# starved, every test run: /' >&3
  run jq -r '.rows[] | select(.verdict == "fail") | .figure' "$(newest_run)/verdict.json"
  failed=$output
  PFSLAB_MODE=quick run elapsed_of "$REPO/scripts/bench"
  status_full=$status
  "$REPO/scripts/throttle" off
  echo "$output" | grep -E '^verdict:|^\[bench\] (pre-run check|lab .* fails)|^elapsed' | sed 's/^/# starved, make bench: /' >&3
  assert_equal "$status_bench" 1
  assert_regex "$failed" "write"
  assert_regex "$failed" "write_iops"
  assert_equal "$status_full" 1
  assert_output --regexp "verdict: FAIL .*lab unhealthy during the run: it performs at [0-9]+% of its lab-up calibration"
  elapsed=$(grep -o 'elapsed [0-9]*' <<<"$output" | cut -d' ' -f2)
  assert [ "$elapsed" -le 180 ]
}

@test "the MDS killed during make bench: the run ends within 2 minutes, names it, leaves no benchmark process" {
  PFSLAB_MODE=quick "$REPO/scripts/bench" >"$BATS_TEST_TMPDIR/bench.out" 2>&1 &
  bench=$!
  sleep 30
  kill "$(cat "$(instance run_root)/mon0/ceph-mds.mon0.pid")"
  killed=$SECONDS
  wait "$bench" && status_bench=0 || status_bench=$?
  took=$((SECONDS - killed))
  sed 's/^/# /' "$BATS_TEST_TMPDIR/bench.out" | grep -E 'watchdog|verdict:' >&3
  echo "# make bench ended ${took} s after the kill" >&3
  assert_equal "$status_bench" 1
  assert [ "$took" -le 120 ]
  run cat "$BATS_TEST_TMPDIR/bench.out"
  assert_output --regexp "verdict: FAIL .*lab unhealthy during the run: .*ceph-mds"
  assert_output --partial "no benchmark process is left on any node"
  run benchmark_processes
  assert_output ""
  run jq -r .state "$(newest_run)/lab-health.json"
  assert_output unhealthy
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "repairing ceph-mds on mon0"
  assert_output --partial "HEALTH_OK"
  # The subset, not the demo: a repaired lab passing its floors is shown by any run.
  run "$REPO/scripts/bench" "${SUBSET[@]}"
  echo "$output" | grep -E '^verdict:' | sed 's/^/# after the repair: /' >&3
  assert_success
  assert_output --regexp "verdict: PASS "
}

@test "an OSD killed during make bench: the pools still serve, the run goes on, its verdict is FAIL (lab degraded)" {
  PFSLAB_MODE=quick "$REPO/scripts/bench" --demo >"$BATS_TEST_TMPDIR/bench.out" 2>&1 &
  bench=$!
  sleep 25
  kill "$(cat "$(instance run_root)/osd2/ceph-osd.2.pid")"
  wait "$bench" && status_bench=0 || status_bench=$?
  sed 's/^/# /' "$BATS_TEST_TMPDIR/bench.out" | grep -E 'watchdog|verdict:' >&3
  assert_equal "$status_bench" 1
  run cat "$BATS_TEST_TMPDIR/bench.out"
  assert_output --partial "[watchdog] lab $LAB is degraded"
  assert_output --regexp "verdict: FAIL .*lab degraded during the run: "
  # The figures measured on the degraded lab are kept in the run, each with its own verdict.
  run jq -r '[.rows[] | select(.measured != null)] | length' "$(newest_run)/verdict.json"
  refute_output "0"
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "repairing ceph-osd on osd2"
}

@test "a bench killed with SIGKILL part way: lab-down is done within 60 s and leaves nothing behind" {
  setsid "$REPO/scripts/bench" >"$BATS_TEST_TMPDIR/bench.out" 2>&1 &
  sleep 40
  kill -KILL -- "-$(ps -o pgid= $! | tr -d ' ')"
  local prefix run_root mount bridge
  prefix=$(instance netns_prefix) run_root=$(instance run_root)
  mount=$(jq -r .filesystem.mount "$REPO/build/$LAB/lab.json") bridge=$(jq -r .targets.local.bridge "$REPO/build/$LAB/lab.json")
  run elapsed_of "$REPO/scripts/lab" down "$LAB"
  assert_success
  echo "$output" | sed 's/^/# /' >&3
  assert_output --partial "nothing is left"
  elapsed=$(grep -o 'elapsed [0-9]*' <<<"$output" | cut -d' ' -f2)
  assert [ "$elapsed" -le 60 ]
  assert_equal "$(ip netns list | grep -c "^$prefix-")" 0
  run ip link show "$bridge"
  assert_failure
  assert_equal "$(findmnt -rn | grep -c -e "$REPO/build/$LAB" -e "$mount")" 0
  assert_equal "$(pgrep -c -f -- "$(ere_quote "$REPO/build/$LAB/")" || true)" 0
  run benchmark_processes
  assert_output ""
  assert [ ! -e "$REPO/build/$LAB" ]
  assert [ ! -e "$run_root" ]
  assert [ ! -e "$mount" ]
}
