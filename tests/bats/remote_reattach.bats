#!/usr/bin/env bats
# shellcheck disable=SC2016
# A remote lab's run detached from the SSH session that launched it
# (scripts/lib/login.sh: login_launch, login_follow, login_detached), against an ssh shim
# that runs the login node's commands on this machine under a scratch kit folder (the
# "login node"), and cuts a session or takes the network away on request: the run's
# output shown once each byte across a dropped session, the retries bounded, the run's
# exit status taken over, a run going there found again.

load helpers

setup() {
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  LAB=$BUILD/hosts-lab
  LOGIN=$BATS_TEST_TMPDIR/login/opt/pfslab
  D=$LOGIN/build/hosts-lab/detached
  CONSOLE=$BATS_TEST_TMPDIR/home/console.log
  mkdir -p "$LAB/ssh" "$LOGIN/scripts" "$LOGIN/build/hosts-lab" "${CONSOLE%/*}"
  : >"$LAB/ssh/config"
  jq -n '{lab: "hosts-lab", target: "baremetal", ssh: {user: "root"}, login: "cli0",
    nodes: [{name: "cli0", address: "10.21.0.12", ssh_address: "10.96.0.2"}]}' >"$LAB/inventory.json"
  for t in setsid nohup python3; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  # The login node's bench: a line every 0.3 s, then its exit status 3.
  cat >"$LOGIN/scripts/bench" <<'EOF'
#!/bin/bash
echo "[bench] run $PFSLAB_RUN_NAME of lab $PFSLAB_LAB, options: $*"
for i in $(seq 1 "${FAKE_LINES:-6}"); do echo "[bench] test $i ok"; sleep 0.3; done
exit 3
EOF
  chmod +x "$LOGIN/scripts/bench"
  # ssh [OPTIONS] NODE COMMAND: COMMAND runs here. $SHIM_STATE/down: the network is gone
  # (255, as ssh); $SHIM_STATE/cut holding N: the next follow session ends after N bytes
  # of output (255: a connection that broke).
  shim ssh 'while [[ $1 == -* ]]; do case $1 in -F | -o) shift 2 ;; *) shift ;; esac; done
shift
if [[ -e $SHIM_STATE/down ]]; then echo "ssh: connect to host 10.96.0.2 port 22: Connection timed out" >&2; exit 255; fi
# A follow session has begun: a run gated on it (fake_run) may go on.
[[ $* != *"tail -c"* ]] || : >"$SHIM_STATE/following"
if [[ $* == *"tail -c"* && -s $SHIM_STATE/cut ]]; then
  n=$(cat "$SHIM_STATE/cut"); rm -f "$SHIM_STATE/cut"
  head -c "$n" < <(bash -c "$*")
  exit 255
fi
exec bash -c "$*"'
  NAME=20261127T201500Z
}

# Run functions of scripts/lib/remote.sh and login.sh as scripts/bench does.
remote_fn() {
  run timeout 60 /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_BUILD="$BUILD" \
    PFSLAB_REMOTE_ROOT="$LOGIN" ${PFSLAB_REATTACH_TIMEOUT:+PFSLAB_REATTACH_TIMEOUT=$PFSLAB_REATTACH_TIMEOUT} FAKE_LINES="${FAKE_LINES:-6}" \
    bash -c 'set -euo pipefail; source "$0/scripts/lib/common.sh" && source "$0/scripts/lib/remote.sh" && PFSLAB_LOG_TAG=bench && eval "$1"' "$KIT" "$1"
}

launch_and_follow() {
  remote_fn "login_launch hosts-lab $NAME PFSLAB_RUN_NAME=$NAME PFSLAB_LAB=hosts-lab -- -n 'IOR x' && login_follow hosts-lab $NAME '$CONSOLE'"
}

@test "a run is launched detached on the login node and followed to its end: each line once, its exit status taken over" {
  launch_and_follow
  assert_failure 3
  assert_line "[bench] launching the run on login node cli0 (detached: it goes on if this machine's SSH session drops)"
  assert_line "[bench] run $NAME of lab hosts-lab, options: -n IOR x"
  for i in 1 2 3 4 5 6; do assert_equal "$(grep -cx "\[bench\] test $i ok" <<<"$output")" 1; done
  # This machine's copy of the console is the login node's, byte for byte.
  cmp "$D/console.log" "$CONSOLE"
  assert_equal "$(cat "$D/status")" 3
  # The launch returned while the run went on (its own session), not at its end.
  assert_equal "$(grep -c 'setsid nohup bash' "$SHIM_LOG")" 1
  refute_output --partial "dropped"
}

@test "a follow session cut mid-run resumes at its byte offset: nothing shown twice, nothing lost, one line saying so" {
  echo 100 >"$SHIM_STATE/cut"
  launch_and_follow
  assert_failure 3
  assert_line --regexp "^\[bench\] the SSH session following the run on login node cli0 dropped \(exit status 255\): reattaching, for up to 600 s \(PFSLAB_REATTACH_TIMEOUT\)$"
  # The line the cut broke is not shown in part: the next session asks for the byte
  # after the last whole line it had, and sends that line whole.
  whole=$(head -c 100 "$D/console.log" | grep -c '')
  whole=$(head -n $((whole - 1)) "$D/console.log" | wc -c)
  assert_line "[bench] reattached to run $NAME on login node cli0: its output resumes at byte $whole"
  cmp "$D/console.log" "$CONSOLE"
  calls ssh | grep -q -- "tail -c +$((whole + 1)) --pid="
  assert_line "[bench] run $NAME of lab hosts-lab, options: -n IOR x"
  for i in 1 2 3 4 5 6; do assert_equal "$(grep -c "test $i ok" <<<"$output")" 1; done
}

@test "a login node out of reach is retried for PFSLAB_REATTACH_TIMEOUT seconds, then one line; the run goes on there" {
  FAKE_LINES=30
  remote_fn "login_launch hosts-lab $NAME PFSLAB_RUN_NAME=$NAME PFSLAB_LAB=hosts-lab --"
  assert_success
  touch "$SHIM_STATE/down"
  PFSLAB_REATTACH_TIMEOUT=3
  SECONDS=0
  remote_fn "login_follow hosts-lab $NAME '$CONSOLE'"
  assert_failure 2
  ((SECONDS < 15))
  assert_line "[bench] error: could not reattach to run $NAME on login node cli0 within 3 s (PFSLAB_REATTACH_TIMEOUT); the run goes on there: run 'make bench' again to reattach and bring it home"
  # It tried again, a bounded number of times, and never ended the run.
  tries=$(calls ssh | grep -cE ' cli0 true$')
  ((tries >= 1 && tries <= 3))
  [ ! -e "$D/status" ]
  rm -f "$SHIM_STATE/down"
  # A later follow picks the run up where this one stopped and takes over its status.
  PFSLAB_REATTACH_TIMEOUT=
  remote_fn "login_follow hosts-lab $NAME '$CONSOLE'"
  assert_failure 3
  cmp "$D/console.log" "$CONSOLE"
}

@test "PFSLAB_REATTACH_TIMEOUT that is not a number of seconds is refused in one line" {
  PFSLAB_REATTACH_TIMEOUT=soon
  remote_fn "login_follow hosts-lab $NAME '$CONSOLE'"
  assert_failure 2
  assert_output "[bench] error: PFSLAB_REATTACH_TIMEOUT=soon is not allowed; give a number of seconds above 0 (default 600)"
}

@test "the run recorded on the login node: running, ended, lost, none; a second launch is refused while one is recorded" {
  remote_fn "login_detached hosts-lab"
  assert_success
  assert_output ""
  FAKE_LINES=20
  remote_fn "login_launch hosts-lab $NAME PFSLAB_RUN_NAME=$NAME PFSLAB_LAB=hosts-lab --"
  assert_success
  remote_fn "login_detached hosts-lab"
  assert_output --regexp "^$NAME 20[0-9-]+T[0-9:]+Z running$"
  remote_fn "login_launch hosts-lab 20261127T201600Z PFSLAB_RUN_NAME=20261127T201600Z PFSLAB_LAB=hosts-lab --"
  assert_failure 2
  assert_output --partial "could not launch the run on login node cli0"
  assert_equal "$(cat "$D/run")" "$NAME"
  assert_equal "$(grep -c 'setsid nohup bash' "$SHIM_LOG")" 2
  [ "$(grep -c 'options' "$D/console.log")" -eq 1 ]
  kill -KILL "$(cat "$D/pid")"
  sleep 0.5
  remote_fn "login_detached hosts-lab"
  assert_output --regexp "^$NAME [^ ]+ lost$"
  echo 0 >"$D/status"
  remote_fn "login_detached hosts-lab"
  assert_output --regexp "^$NAME [^ ]+ ended$"
  # A record that is not a run the kit made is named, not followed.
  echo "../../etc" >"$D/run"
  remote_fn "login_detached hosts-lab"
  assert_failure 2
  assert_output --partial "login node cli0 records a run that is not the kit's"
}

# scripts/bench of a copy of the kit whose active lab is the remote lab above.
kit_copy() {
  COPY=$BATS_TEST_TMPDIR/kit
  mkdir -p "$COPY/build"
  cp -r "$KIT/scripts" "$KIT/families" "$KIT/pfslab" "$KIT/labs" "$KIT/registry" "$KIT/targets" "$COPY/"
  ln -s "$KIT/.venv" "$COPY/.venv"
  cp -r "$LAB" "$COPY/build/"
  echo "Host *" >"$COPY/build/hosts-lab/ssh/config"
  echo hosts-lab >"$COPY/build/active-lab"
}

# A run on the login node as login_launch leaves it, by a stand-in bench that writes its
# run directory and ends with STATUS after LINES lines. With GATED, it holds after its
# second line until a make bench follows it (the ssh shim's mark), so that it is still
# going when a slow make bench (a loaded CI machine) gets to ask: a run that ended by
# then is the next test's case.
fake_run() {
  local lines=$1 status=$2 gate=${3:+$SHIM_STATE/following}
  mkdir -p "$D" "$LOGIN/build/runs/hosts-lab"
  echo "$NAME" >"$D/run"
  echo 2026-11-27T20:15:00Z >"$D/since"
  setsid bash -c 'for i in $(seq 1 "$1"); do
      if ((i == 3)) && [[ -n $4 ]]; then for _ in $(seq 600); do [[ -e $4 ]] && break; sleep 0.1; done; fi
      echo "[bench] test $i ok"; sleep 0.3
    done
    mkdir -p "$3" && echo "{\"runs\": []}" >"$3/report.json"; echo "$2" >"$0/status"' "$D" "$lines" "$status" "$LOGIN/build/runs/hosts-lab/$NAME" "$gate" \
    </dev/null >>"$D/console.log" 2>&1 &
  echo $! >"$D/pid"
}

bench_copy() {
  run timeout 60 env PATH="$SHIMS:$PATH" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_REMOTE_ROOT="$LOGIN" PFSLAB_ROOT="$COPY" "$COPY/scripts/bench" "$@"
}

@test "make bench while a run is going on the login node reattaches to it, shows its progress and brings that run home: no second run" {
  kit_copy
  fake_run 8 1 gated
  sleep 1
  bench_copy -n IOR
  assert_failure 1
  assert_line "[bench] a run is going on login node cli0 since 2026-11-27T20:15:00Z: reattaching (run $NAME; the options given are for a new run, once this one is home); Ctrl-C ends it"
  for i in 1 2 3 4 5 6 7 8; do assert_equal "$(grep -cx "\[bench\] test $i ok" <<<"$output")" 1; done
  refute_output --partial "launching the run"
  [ -z "$(grep 'setsid' "$SHIM_LOG")" ]
  [ -s "$COPY/build/runs/hosts-lab/$NAME/report.json" ]
  assert_equal "$(ls "$COPY/build/runs/hosts-lab")" "$NAME"
  assert_equal "$(grep -c 'test . ok' "$COPY/build/runs/hosts-lab/$NAME/console.log")" 8
  # Home, so nothing of it is left there.
  [ ! -e "$LOGIN/build/runs/hosts-lab/$NAME" ]
  [ ! -e "$D" ]
}

@test "a run that ended while no make bench followed it is brought home by the next make bench, with its exit status" {
  kit_copy
  fake_run 2 0
  sleep 1.5
  [ -e "$D/status" ]
  # What the killed make bench had shown is shown again, then the rest, once.
  mkdir -p "$COPY/build/runs/hosts-lab/$NAME"
  head -n 1 "$D/console.log" >"$COPY/build/runs/hosts-lab/$NAME/console.log"
  bench_copy
  assert_success
  assert_line "[bench] run $NAME on login node cli0 (since 2026-11-27T20:15:00Z) ended while no make bench followed it: bringing it home"
  assert_equal "$(grep -c 'test . ok' <<<"$output")" 2
  [ ! -e "$D" ]
  [ -s "$COPY/build/runs/hosts-lab/$NAME/report.json" ]
  [ ! -e "$LOGIN/build/runs/hosts-lab/$NAME" ]
}

@test "make bench ended (TERM) while it follows a run ends the run on the login node and brings home what it measured" {
  kit_copy
  fake_run 100 0
  # The login node's scripts/lab stop-bench: ends the run's processes; its bench then
  # finishes writing (the report) and records its status, as scripts/bench does there.
  printf '%s\n' '#!/bin/bash' "[[ \$1 == stop-bench ]] || exit 2" "pkill -P \"\$(cat '$D/pid')\" sleep; kill \"\$(cat '$D/pid')\"" \
    "mkdir -p '$LOGIN/build/runs/hosts-lab/$NAME' && echo '{\"runs\": []}' >'$LOGIN/build/runs/hosts-lab/$NAME/report.json'; echo 143 >'$D/status'" >"$LOGIN/scripts/lab"
  chmod +x "$LOGIN/scripts/lab"
  env PATH="$SHIMS:$PATH" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_REMOTE_ROOT="$LOGIN" PFSLAB_ROOT="$COPY" "$COPY/scripts/bench" >"$BATS_TEST_TMPDIR/bench.log" 2>&1 &
  pid=$!
  timeout 20 bash -c "until grep -q 'test 2 ok' '$BATS_TEST_TMPDIR/bench.log'; do sleep 0.2; done"
  kill -TERM "$pid"
  rc=0
  timeout 30 tail --pid="$pid" -f /dev/null
  wait "$pid" || rc=$?
  run cat "$BATS_TEST_TMPDIR/bench.log"
  assert_equal "$rc" 130
  assert_line "[bench] interrupted: ending the run on the login node and bringing home what it measured"
  assert_line "[bench] brought the run home from cli0: $COPY/build/runs/hosts-lab/$NAME"
  grep -q "scripts/lab stop-bench hosts-lab" "$SHIM_LOG"
  [ -s "$COPY/build/runs/hosts-lab/$NAME/report.json" ]
  [ ! -e "$D" ]
  # This machine's follow session ended with it.
  [ -z "$(pgrep -f -- "tail -c .*$D/console.log")" ]
}

@test "lab-up while a run goes on the login node is refused in one line naming it; a login node of no recorded key is not asked" {
  FAKE_LINES=20
  remote_fn "login_launch hosts-lab $NAME PFSLAB_RUN_NAME=$NAME PFSLAB_LAB=hosts-lab --"
  assert_success
  : >"$SHIM_LOG"
  remote_fn "login_refuse_running hosts-lab"
  assert_success
  [ -z "$(calls ssh)" ]
  echo "cli0 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO" >"$LAB/ssh/known_hosts"
  echo "Host *" >"$LAB/ssh/config"
  remote_fn "login_refuse_running hosts-lab"
  assert_failure 2
  assert_output --regexp "^\[bench\] error: a run of lab hosts-lab is going on its login node cli0 since [0-9T:-]+Z \(run $NAME\): 'make bench' reattaches to it and brings it home, 'make lab-down' ends it; lab-up would restart the lab under it$"
  kill -KILL "$(cat "$D/pid")"
  sleep 0.5
  remote_fn "login_refuse_running hosts-lab"
  assert_success
}
