#!/usr/bin/env bats
# A lab whose target says detached_runs (a site lab: the user runs the kit on the
# submit node through their own SSH) has scripts/bench launch the run in a session of
# its own and follow it: the follower's SIGHUP (the SSH session dropping) leaves the
# run going, the next scripts/bench reattaches and returns the run's status, Ctrl-C
# ends the run, and a run that ended unfollowed is reported once.
# The kit is the real one except for what needs a lab, as in bench_exit.bats: the lab
# "local" is up (its inventory names target site, whose registry entry says
# detached_runs; its watchdog, pfslab bench's own, has no scheduler to ask), and `reframe` announces one
# test, then waits for the file $KIT/gate before it "runs" by leaving a recorded run
# (tests/fixtures/runs) in its run directory; SIGINT makes it stop as ReFrame does.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
load stand_in_kit

setup() {
  stand_in_kit
  cat >"$KIT/.venv/bin/reframe" <<'EOF'
#!/bin/bash
for arg; do
  [[ $arg == -l ]] && { echo "- Fio_fio_rand4k %lab=local %workload=fio-rand4k %threads=1 %mode=quick /0123abcd"; exit 0; }
done
echo $$ >"$PFSLAB_ROOT/reframe.pid"
trap 'echo interrupted >"$PFSLAB_ROOT/reframe.interrupted"; echo "[ReFrame] interrupted: cancelling the jobs"; exit 1' INT
echo "[==========] Running 1 check(s)"
echo "[ RUN      ] Fio_fio_rand4k %lab=local %workload=fio-rand4k %threads=1 %mode=quick /0123abcd"
until [[ -e $PFSLAB_ROOT/gate ]]; do sleep 0.1; done
cp -r "$RECORDED"/. "$PFSLAB_RUN_DIR/"
echo "[  PASSED  ] Ran 1/1 test case(s)"
EOF
  chmod +x "$KIT/.venv/bin/reframe"
  echo '{"target": "site", "lab": "local", "nodes": [], "clients": [], "inside": "local"}' >"$KIT/build/local/inventory.json"
  export PFSLAB_ROOT=$KIT PFSLAB_NO_PRECHECK=1 RECORDED=$REPO/tests/fixtures/runs/local-mixed-verdicts
}

teardown() {
  # Nothing of a failed test's run outlives it.
  [[ ! -s $KIT/reframe.pid ]] || kill "$(cat "$KIT/reframe.pid")" 2>/dev/null || true
  touch "$KIT/gate"
  [[ -z ${FOLLOWER:-} ]] || kill -KILL -- "-$FOLLOWER" 2>/dev/null || true
}

run_dir() { find "$KIT/build/runs/local" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1; }

# Wait up to 20 s for a command to succeed.
until_true() {
  local n
  for n in $(seq 200); do "$@" && return 0; sleep 0.1; done
  echo "gave up waiting for: $*" >&2
  return 1
}

# scripts/bench in a session of its own (its pid is the session's), as a make bench in
# an SSH session's terminal: SIGINT not ignored (a background command of a script
# starts with it ignored); its output in $BATS_TEST_TMPDIR/follower.out. Returns once
# the run's reframe waits at the gate.
start_follower() {
  setsid env --default-signal=INT "$KIT/scripts/bench" "$@" >"$BATS_TEST_TMPDIR/follower.out" 2>&1 &
  FOLLOWER=$!
  until_true test -s "$KIT/reframe.pid"
  until_true grep -qF "(1/1) start Fio" "$BATS_TEST_TMPDIR/follower.out"
}

# The follower's status once it ended (FOLLOWER_STATUS); a test fails rather than
# hangs when it does not end.
follower_gone() {
  local stat
  stat=$(ps -o stat= -p "$FOLLOWER" 2>/dev/null) || return 0
  [[ $stat == Z* ]]
}
follower_ended() {
  until_true follower_gone
  FOLLOWER_STATUS=0
  wait "$FOLLOWER" || FOLLOWER_STATUS=$?
}

run_alive() { kill -0 "$(cat "$KIT/reframe.pid")" 2>/dev/null; }

@test "the follower's SIGHUP leaves the run going: it keeps the lab's lock, ends on its own and writes its outputs" {
  start_follower
  kill -HUP -- "-$FOLLOWER"
  follower_ended
  assert_equal "$FOLLOWER_STATUS" 129
  run cat "$BATS_TEST_TMPDIR/follower.out"
  assert_output --partial "launching the run detached from this terminal"
  assert_output --partial "SIGHUP: no longer following run $(basename "$(run_dir)"); the run goes on"
  assert_output --partial "run 'make bench' again to reattach"
  sleep 1
  run_alive
  # The run holds the lab: lab-down (any command that locks it) is refused.
  run bash -c 'source "$PFSLAB_ROOT/scripts/lib/common.sh"; lock_lab local lab-down'
  assert_failure
  assert_equal "$(awk '{print $3}' "$KIT/build/local/lock")" bench
  touch "$KIT/gate"
  until_true test -e "$(run_dir)/status"
  assert_equal "$(cat "$(run_dir)/status")" 1
  assert [ -s "$(run_dir)/report.json" ]
  assert [ -s "$(run_dir)/verdict.json" ]
  run cat "$(run_dir)/console.log"
  assert_output --partial "verdict: FAIL"
  # The whole run, follower's part and the rest, in the one run directory.
  assert_equal "$(find "$KIT/build/runs/local" -mindepth 1 -maxdepth 1 -type d | wc -l)" 1
}

@test "make bench while the run goes reattaches (its follower ended by SIGTERM): everything so far, then the rest, and the run's status" {
  start_follower
  kill -TERM -- "-$FOLLOWER"
  follower_ended
  assert_equal "$FOLLOWER_STATUS" 143
  run cat "$BATS_TEST_TMPDIR/follower.out"
  assert_output --partial "SIGTERM: no longer following run $(basename "$(run_dir)"); the run goes on"
  (sleep 2; touch "$KIT/gate") &
  run "$KIT/scripts/bench" -n IOR
  assert_failure 1
  assert_output --partial "a run is going here since "
  assert_output --partial "reattaching (run $(basename "$(run_dir)"); the options given are for a new run, once this one has ended); Ctrl-C ends it"
  # What the first follower showed, again, then what came after it.
  assert_output --partial "(1/1) start Fio"
  assert_output --partial "verdict: FAIL"
  assert_output --partial "raw outputs, job scripts and the JSON report: $(run_dir)"
  refute_output --partial "launching the run"
  # Shown: the record is gone, the next make bench starts a new run.
  assert [ ! -e "$KIT/build/local/detached" ]
  assert_equal "$(find "$KIT/build/runs/local" -mindepth 1 -maxdepth 1 -type d | wc -l)" 1
}

@test "Ctrl-C in the follower ends the run as in the foreground: ReFrame gets SIGINT; the follower shows the end and exits with the run's status" {
  start_follower
  # Ctrl-C: SIGINT to the terminal's foreground process group, the follower's.
  kill -INT -- "-$FOLLOWER"
  follower_ended
  until_true test -e "$KIT/reframe.interrupted"
  assert [ -e "$(run_dir)/status" ]
  assert_equal "$FOLLOWER_STATUS" "$(cat "$(run_dir)/status")"
  assert [ "$FOLLOWER_STATUS" -ne 0 ]
  run cat "$BATS_TEST_TMPDIR/follower.out"
  assert_output --partial "interrupted: ending run $(basename "$(run_dir)")"
  # The run's end, shown by the follower: here ReFrame stopped before it reported.
  assert_output --partial "error: ReFrame wrote no report (exit status 1)"
  # ReFrame's own last words reached its reframe.out (the progress filter read on).
  run cat "$(run_dir)/reframe.out"
  assert_output --partial "[ReFrame] interrupted: cancelling the jobs"
  refute run_alive
  assert [ ! -e "$KIT/build/local/detached" ]
}

@test "a run that ended while no make bench followed it: the next make bench shows its end and status, once" {
  start_follower
  kill -HUP -- "-$FOLLOWER"
  follower_ended
  touch "$KIT/gate"
  until_true test -e "$(run_dir)/status"
  first=$(run_dir)
  run "$KIT/scripts/bench" -n IOR
  assert_failure 1
  assert_output --partial "run $(basename "$first") (since "
  assert_output --partial "ended while no make bench followed it; its end follows (all of it: $first/console.log) (the options given are for a new run: run make bench again)"
  assert_output --partial "verdict: FAIL"
  refute_output --partial "(1/1) start"
  assert [ ! -e "$KIT/build/local/detached" ]
  # Once: the next make bench is a new run (the gate is open: it ends at once).
  RECORDED=$REPO/tests/fixtures/runs/local-calibrated-demo run "$KIT/scripts/bench"
  assert_success
  assert_output --partial "launching the run detached"
  assert_output --partial "verdict: PASS"
  assert_equal "$(find "$KIT/build/runs/local" -mindepth 1 -maxdepth 1 -type d | wc -l)" 2
}
