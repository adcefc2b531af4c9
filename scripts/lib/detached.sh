# shellcheck shell=bash
# A run on this machine detached from the terminal, for a lab whose target says
# detached_runs (targets/<target>/target.json): a site lab, whose user reaches the
# site's submit node with their own SSH and runs the kit there. What a remote lab's
# login node does for its runs (scripts/lib/login.sh: login_launch, login_detached,
# login_follow), done here without SSH: the run is scripts/bench itself in a session
# of its own (setsid), so the SSH session dropping (SIGHUP) never ends a run of hours;
# make bench follows its output, and a later make bench finds a run still going and
# reattaches to it. Sourced by scripts/bench; defines functions only.
#
# What this machine keeps of the run being followed, in the lab's state:
#   build/<lab>/detached/{run,since,pid}: the run's name, its UTC start, the detached
#     shell's pid; made with mkdir, so a second launch fails before anything starts;
#     removed once a make bench has shown the run's end.
# and in the run directory itself: console.log (everything the run printed) and status
# (its exit status, written when it ends).
detached_dir() { echo "$PFSLAB_ROOT/build/$1/detached"; }

# The detached run's environment names its run directory (made by the make bench that
# launched it); the run's own processes carry PFSLAB_RUN_DIR, which lab-down looks for.
DETACHED_VAR=PFSLAB_DETACHED_RUN

# Start scripts/bench in a session of its own (setsid), stdin /dev/null, its output to
# RUN_DIR/console.log and its exit status to RUN_DIR/status when it ends; returns as
# soon as it started. Usage: detached_launch LAB RUN_DIR BENCH-ARGS...
detached_launch() {
  local lab=$1 run_dir=$2 d
  shift 2
  d=$(detached_dir "$lab")
  # mkdir, not mkdir -p: a second launch while a run is recorded fails here.
  mkdir -m 700 "$d" 2>/dev/null ||
    die "could not record the run in $d (a run already recorded there? 'make bench' reattaches to it)"
  basename "$run_dir" >"$d/run"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$d/since"
  : >"$run_dir/console.log"
  log "launching the run detached from this terminal: it goes on if your SSH session drops; 'make bench' reattaches to it"
  # setsid --fork in the foreground, not `&`: an asynchronous command of a script
  # starts with SIGINT ignored, which it could not undo, and the run must get Ctrl-C's
  # SIGINT as in the foreground (ReFrame cancels its jobs). The detached shell traps it
  # instead of ignoring it (an ignored signal would be inherited), so it still writes
  # the status once the bench ended; it writes its own pid first.
  # shellcheck disable=SC2016 # $0, $1, $$, $@ and $? belong to the detached shell
  env "$DETACHED_VAR=$run_dir" setsid --fork nohup bash -c 'd=$1; shift; echo $$ >"$d/pid.new" && mv "$d/pid.new" "$d/pid"; trap : INT; "$@"; echo $? >"$0/status.new" && mv "$0/status.new" "$0/status"' \
    "$run_dir" "$d" "$PFSLAB_ROOT/scripts/bench" "$@" </dev/null >>"$run_dir/console.log" 2>&1
  wait_for 10 "the detached run to start" test -s "$d/pid" ||
    die "the detached run did not start within 10 s; see $run_dir/console.log"
}

# "NAME SINCE STATE" of the run recorded for the lab (nothing when none): STATE is
# running, ended (it wrote its exit status) or lost (its process is gone without one:
# the machine restarted, or it was killed).
detached_state() {
  local lab=$1 d name pid state
  d=$(detached_dir "$lab")
  [[ -s $d/run ]] || return 0
  name=$(<"$d/run")
  pid=$(cat "$d/pid" 2>/dev/null || true)
  if [[ -e $PFSLAB_ROOT/build/runs/$lab/$name/status ]]; then
    state=ended
  elif [[ $pid =~ ^[0-9]+$ ]] && proc_alive "$pid" && grep -qaF -- "runs/$lab/$name" "/proc/$pid/cmdline" 2>/dev/null; then
    state=running
  else
    state=lost
  fi
  echo "$name $(cat "$d/since" 2>/dev/null || echo ?) $state"
}

# The run's output from its first byte, shown as it comes until the run's process
# ends; returns the run's exit status. The tail ignores SIGINT: Ctrl-C is the run's to
# act on (scripts/bench forwards it), and its end is still shown. DETACHED_TAIL: the
# tail, for a follower that leaves. Usage: detached_follow LAB RUN_DIR
DETACHED_TAIL=""
detached_follow() {
  local lab=$1 run_dir=$2 pid fd line status
  pid=$(cat "$(detached_dir "$lab")/pid" 2>/dev/null || echo 0)
  exec {fd}< <(
    trap '' INT
    exec tail -c +1 -s 0.5 --pid="$pid" -f "$run_dir/console.log"
  )
  DETACHED_TAIL=$!
  while :; do
    if LC_ALL=C IFS= read -r -u "$fd" line; then
      printf '%s\n' "$line"
      continue
    fi
    status=$?
    # A signal whose trap ran (Ctrl-C, forwarded to the run) cut the read: what it
    # read of the line is shown and the rest follows.
    ((status > 128)) || break
    printf '%s' "$line"
  done
  # The run's last line, unterminated.
  [[ -z $line ]] || printf '%s' "$line"
  exec {fd}<&-
  wait "$DETACHED_TAIL" 2>/dev/null || true
  DETACHED_TAIL=""
  status=$(cat "$run_dir/status" 2>/dev/null || echo none)
  [[ $status =~ ^[0-9]+$ ]] || { log "run $(basename "$run_dir") ended without an exit status (its process was killed, or this machine restarted)"; return 1; }
  return "$status"
}

# The lab's record of run NAME removed (a make bench showed its end); a record of
# another run is kept.
detached_forget() {
  local lab=$1 name=$2 d
  d=$(detached_dir "$lab")
  [[ $(cat "$d/run" 2>/dev/null) == "$name" ]] || return 0
  rm -rf "$d"
}
