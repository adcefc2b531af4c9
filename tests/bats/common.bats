#!/usr/bin/env bats
# The shell helpers every script leans on to never hang on a sick file system
# (scripts/lib/common.sh): bounded commands, mount checks read from mountinfo,
# bounded unmounts. Real mounts (tmpfs) where root may make them.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  # shellcheck source=scripts/lib/common.sh
  source "$REPO/scripts/lib/common.sh"
  unset PFSLAB_MOUNTS
}

teardown() {
  if [[ -n ${MNT:-} ]] && is_mounted "$MNT"; then umount -l "$MNT"; fi
}

@test "bounded: a command that finishes keeps its status, one that does not is given up with 124" {
  run bounded 5 true
  assert_success
  run bounded 5 sh -c 'exit 7'
  assert_failure 7
  start=$SECONDS
  run bounded 1 sleep 30
  assert_failure 124
  assert [ $((SECONDS - start)) -le 3 ]
}

@test "ere_quote: pgrep finds the processes under a checkout path holding '+' and '.', and no other checkout's" {
  local mine=$BATS_TEST_TMPDIR/k@GA+rQ.x-_ other=$BATS_TEST_TMPDIR/k@GArQ.x-_ pid_mine pid_other
  (exec -a "$mine/build/local/lab/daemon" sleep 60) &
  pid_mine=$!
  (exec -a "$other/build/local/lab/daemon" sleep 60) &
  pid_other=$!
  run pgrep -f -- "$(ere_quote "$mine/build/local/lab/")"
  kill "$pid_mine" "$pid_other"
  assert_output "$pid_mine"
  # Every character an extended regular expression gives a meaning to stands for itself.
  assert_equal "$(grep -cE -- "^$(ere_quote 'a[b](c){2}|e^f$g*h?i\j+k.l')$" <<<'a[b](c){2}|e^f$g*h?i\j+k.l')" 1
}

@test "is_mounted reads the mount table, and PFSLAB_MOUNTS stands in for it" {
  run is_mounted /proc
  assert_success
  run is_mounted "$BATS_TEST_TMPDIR"
  assert_failure
  echo "$BATS_TEST_TMPDIR/x tmpfs none" >"$BATS_TEST_TMPDIR/mounts"
  PFSLAB_MOUNTS=$BATS_TEST_TMPDIR/mounts run is_mounted "$BATS_TEST_TMPDIR/x"
  assert_success
  PFSLAB_MOUNTS=$BATS_TEST_TMPDIR/mounts run is_mounted /proc
  assert_failure
}

@test "unmount_bounded unmounts a mount, and does nothing where nothing is mounted" {
  [[ $(id -u) -eq 0 ]] || skip "mounting a tmpfs needs root"
  MNT=$BATS_TEST_TMPDIR/mnt
  mkdir -p "$MNT"
  mount -t tmpfs pfslab-test "$MNT"
  run is_mounted "$MNT"
  assert_success
  run fuse_connection "$MNT"
  assert_output ""  # not FUSE
  run unmount_bounded "$MNT" 5
  assert_success
  run is_mounted "$MNT"
  assert_failure
  run unmount_bounded "$MNT" 5
  assert_success
}

@test "a busy mount is detached lazily, within the bound, and says it was forced" {
  [[ $(id -u) -eq 0 ]] || skip "mounting a tmpfs needs root"
  MNT=$BATS_TEST_TMPDIR/busy
  mkdir -p "$MNT"
  mount -t tmpfs pfslab-test "$MNT"
  # A process with its working directory inside keeps the mount busy.
  (cd "$MNT" && exec sleep 30) &
  holder=$!
  start=$SECONDS
  run unmount_bounded "$MNT" 2
  kill "$holder"
  assert_success
  assert_output --partial "forced: detaching $MNT lazily"
  assert [ $((SECONDS - start)) -le 8 ]
  run is_mounted "$MNT"
  assert_failure
}

@test "stop_pidfile stops a process that ignores TERM, and never waits without end" {
  bash -c 'trap "" TERM; exec sleep 60' &
  echo $! >"$BATS_TEST_TMPDIR/p.pid"
  # Wait until it ignores TERM (bit 15 of SigIgn), or the test would race its trap.
  until (( 0x$(awk '/^SigIgn/ {print $2}' "/proc/$!/status") & 0x4000 )); do sleep 0.05; done
  start=$SECONDS
  run stop_pidfile "$BATS_TEST_TMPDIR/p.pid" 1
  assert_success
  assert_output --partial "ignored TERM for 1s; killing it"
  assert [ $((SECONDS - start)) -le 10 ]
  assert [ ! -e "$BATS_TEST_TMPDIR/p.pid" ]
}

@test "pid_alive: a dead process that is not reaped yet (a zombie) is not alive" {
  # The child exits at once; its parent sleeps and never reaps it.
  python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
open(sys.argv[1], "w").write(f"{pid}\n")
time.sleep(10)' "$BATS_TEST_TMPDIR/z.pid" &
  parent=$!
  for _ in $(seq 50); do
    [[ -s $BATS_TEST_TMPDIR/z.pid && $(ps -o stat= -p "$(<"$BATS_TEST_TMPDIR/z.pid")" 2>/dev/null) == Z* ]] && break
    sleep 0.1
  done
  assert_equal "$(ps -o stat= -p "$(<"$BATS_TEST_TMPDIR/z.pid")")" Z
  run pid_alive "$BATS_TEST_TMPDIR/z.pid"
  assert_failure
  echo "$parent" >"$BATS_TEST_TMPDIR/p.pid"
  run pid_alive "$BATS_TEST_TMPDIR/p.pid"
  assert_success
  # stop_pidfile does not wait out its grace on the zombie's parent either: it ends.
  run stop_pidfile "$BATS_TEST_TMPDIR/p.pid" 5
  assert_success
  refute_output --partial "ignored TERM"
  wait "$parent" 2>/dev/null || true
}

@test "lab_field: reads the lab this command resolved, then the lab as brought up, and refuses a bad name" {
  [[ -x $REPO/.venv/bin/pfslab ]] || skip "the kit's command is missing: run 'make deps'"
  PFSLAB_LAB_JSON=$BATS_TEST_TMPDIR/resolved.json
  "$REPO/.venv/bin/pfslab" lab show local | jq '.title = "as resolved for this command" | .benchmark.calibrate = false' >"$PFSLAB_LAB_JSON"
  run lab_field local title
  assert_success
  assert_output "as resolved for this command"
  run lab_field local benchmark.calibrate
  assert_success
  assert_output false
  run lab_field local derived.clients
  assert_output '["cli0","cli1"]'
  run lab_field local no.such.field
  assert_failure
  assert_output --partial "lab local has no field no.such.field"
  # Another lab's field is not read from this lab's copy.
  run lab_field aws-cephfs target
  assert_success
  assert_output aws
  run lab_field '../etc' target
  assert_failure 2
  assert_output --partial "LAB=../etc is not a lab name"
}
