# shellcheck shell=bash
# A remote lab seen from inside: its login node (the inventory's `login`, the first
# client unless the lab file names one) launches the benchmarks, as at every real site:
# mpirun's daemons and IOzone's children connect back to the launching host, which
# must be on the lab's network. Sourced after remote.sh; defines functions only.
#
# What lab-up leaves on the login node, under the kit there ($REMOTE_ROOT):
#   build/active-lab, build/<lab>/{lab.json,inventory.json,calibration.json}: the lab as
#     the kit's machine resolved it; the inventory is the inside view (every node at its
#     lab address, no ProxyJump, the inner key below);
#   build/<lab>/ssh/{config,known_hosts}: every node by name and address, host keys
#     checked strictly (the ones the kit's machine recorded);
#   build/<lab>/ssh/id_ed25519: the lab's inner key, made on the login node and never
#     copied off it; its public half is authorised on every node of the lab for
#     connections from the login node's lab address only (from=), marked with the lab
#     and this checkout's instance, and removed again by lab-down.
# Runs are started there (scripts/bench) and brought home whole to build/runs/<lab>/.

# The lab's login node; nothing for a lab without clients (nothing to benchmark from).
login_node() { jq -r '.login // .clients[0] // empty' "$(remote_inv "$1")"; }
login_root() { echo "$REMOTE_ROOT/build/$1"; }

# What lab-up does on the login node and lab-down on existing hosts is the kit's Python
# (pfslab/lifecycle/remote_up.py); the bench's functions below call these by name.

# The kit on every node made this checkout's (its image digest; install-kit.sh sync).
remote_kit_sync() { remote_step kit-sync "$1"; }

# The lab's state as the login node must see it, shipped there (replacing the last copy).
login_ship_state() { remote_step ship-state "$1"; }

# What the lab wrote on hosts that outlive it, removed (scripts/host-forget run there).
login_forget() { remote_step forget "$1"; }

# Whether benchmarks of the lab are launched from this machine: a lab whose nodes are not
# remote (the local target's), or this is the remote lab's login node (its inventory is
# the inside view).
login_launches_here() {
  local inv
  inv=$(remote_inv "$1")
  ! target_remote "$(jq -r '.target' "$inv")" || jq -e '.inside' "$inv" >/dev/null
}

# PFSLAB_TOOL_PATH's folders (benchmark binaries built for the lab's nodes' OS), copied
# to every client and the login node under the lab's state there; prints the remote
# PFSLAB_TOOL_PATH. Nothing when PFSLAB_TOOL_PATH is unset.
login_ship_tools() {
  local lab=$1 dirs=() dir i node nodes remote=""
  [[ -n ${PFSLAB_TOOL_PATH:-} ]] || return 0
  IFS=: read -r -a dirs <<<"$PFSLAB_TOOL_PATH"
  nodes=$(jq -r '([.login] + .clients) | unique | .[]' "$(remote_inv "$lab")")
  for i in "${!dirs[@]}"; do
    dir=${dirs[$i]}
    [[ -d $dir ]] || die "PFSLAB_TOOL_PATH names $dir, which is not a folder"
    for node in $nodes; do
      tar -C "$dir" -cf - . | remote_ssh_in "$lab" "$node" "mkdir -p '$(login_root "$lab")/tools/$i' && tar -C '$(login_root "$lab")/tools/$i' -xf - --no-same-owner --no-same-permissions" ||
        remote_step_failed "$lab" "$node" 255 "copying $dir (PFSLAB_TOOL_PATH) to it"
    done
    remote+=${remote:+:}$(login_root "$lab")/tools/$i
  done
  log "copied PFSLAB_TOOL_PATH ($PFSLAB_TOOL_PATH) to $(wc -w <<<"$nodes") node(s) of lab $lab"
  echo "$remote"
}

# A run is launched on the login node detached from the SSH session that starts it
# (setsid, its output to a file there), so a dropped connection never ends a run of
# hours: this machine follows its output over SSH, reattaches when the session drops,
# and a later `make bench` finds a run still going and reattaches to it. What the login
# node keeps of the run being launched, in the lab's state there (the run directory
# itself is made by the bench there and must not exist before it, pfslab/state.py):
#   run (its name), since (UTC start), pid (the detached shell), console.log (everything
#   the bench printed), status (its exit status, written when it ends).
login_detached_dir() { echo "$(login_root "$1")/detached"; }

# Run scripts/bench on the login node with the run's name chosen here, detached; then
# follow it (login_follow). Usage: login_bench LAB RUN_NAME CONSOLE BENCH-ARGS...
# (status: the bench's)
login_bench() {
  local lab=$1 name=$2 console=$3 tools env=() var
  shift 3
  remote_kit_sync "$lab"
  login_ship_state "$lab"
  tools=$(login_ship_tools "$lab")
  # The run's provenance names this machine and its commit (the login node's kit is a copy of it).
  env=("PFSLAB_RUN_NAME=$name" "PFSLAB_LAB=$lab" "PFSLAB_LAUNCHED_FROM=$(hostname) $(git -C "$PFSLAB_ROOT" rev-parse HEAD 2>/dev/null || true)")
  [[ -z $tools ]] || env+=("PFSLAB_TOOL_PATH=$tools")
  for var in PFSLAB_MODE PFSLAB_NO_PRECHECK PFSLAB_WATCHDOG_INTERVAL; do
    [[ -z ${!var:-} ]] || env+=("$var=${!var}")
  done
  login_launch "$lab" "$name" "${env[@]}" -- "$@"
  login_follow "$lab" "$name" "$console"
}

# Start scripts/bench on the login node in a session of its own (setsid), its output to
# the record's console.log and its exit status to status when it ends; returns as soon
# as it started. Usage: login_launch LAB RUN_NAME [VAR=VALUE...] -- BENCH-ARGS...
login_launch() {
  local lab=$1 name=$2 login d env=() envs="" args=""
  shift 2
  while (($#)) && [[ $1 != -- ]]; do env+=("$1"); shift; done
  (($#)) && shift
  login=$(login_node "$lab")
  d=$(login_detached_dir "$lab")
  log "launching the run on login node $login (detached: it goes on if this machine's SSH session drops)"
  ((${#env[@]} == 0)) || envs=$(printf '%q ' "${env[@]}")
  (($#)) && args=$(printf '%q ' "$@")
  # mkdir, not mkdir -p: a second launch while a run is recorded fails here, before
  # anything starts.
  # shellcheck disable=SC2016 # $0, $@ and $? belong to the detached shell
  remote_ssh "$lab" "$login" "cd '$REMOTE_ROOT' && mkdir -m 700 '$d' && printf '%s\n' '$name' >'$d/run' && date -u +%Y-%m-%dT%H:%M:%SZ >'$d/since' && : >'$d/console.log' &&
    { setsid nohup bash -c '\"\$@\"; echo \$? >\"\$0/status.new\" && mv \"\$0/status.new\" \"\$0/status\"' '$d' env $envs scripts/bench $args </dev/null >>'$d/console.log' 2>&1 & echo \$! >'$d/pid'; }" ||
    die "could not launch the run on login node $login (a run already recorded in $login:$d? 'make bench' reattaches to it)"
}

# "NAME SINCE STATE" of the run recorded on the lab's login node (nothing when none):
# STATE is running, ended (it wrote its exit status) or lost (its process is gone
# without one: the login node restarted, or it was killed).
login_detached() {
  local lab=$1 login d out
  login=$(login_node "$lab")
  d=$(login_detached_dir "$lab")
  out=$(remote_ssh "$lab" "$login" "d='$d'; test -s \"\$d/run\" || exit 0; n=\$(cat \"\$d/run\"); p=\$(cat \"\$d/pid\" 2>/dev/null); if test -e \"\$d/status\"; then st=ended; elif test -n \"\$p\" && grep -qaF -- \"\$n\" /proc/\$p/cmdline 2>/dev/null; then st=running; else st=lost; fi; echo \"\$n \$(cat \"\$d/since\" 2>/dev/null || echo ?) \$st\"" 2>&1) ||
    die "$(remote_diagnose "$lab" "$login" "$out")"
  [[ -n $out ]] || return 0
  local problem
  problem=$(cd "$PFSLAB_ROOT" && python3 -m pfslab.names run-name-problem "${out%% *}") ||
    die "login node $login records a run that is not the kit's ($problem) in $d; remove that folder there"
  echo "$out"
}

# lab-up while a run of the lab goes on its login node (its make bench was killed, or
# gave up reattaching) would sync the kit and restart the roles under it: refused in one
# line naming the run. Asked only of a login node whose host key is recorded already,
# so no connection learns a key here; one that does not answer is lab-up's to name.
login_refuse_running() {
  local lab=$1 dir login info name since state
  dir=$(remote_dir "$lab")
  [[ -s $dir/inventory.json && -s $dir/ssh/config ]] || return 0
  login=$(login_node "$lab" 2>/dev/null) || return 0
  [[ -n $login ]] && grep -q "^$login " "$dir/ssh/known_hosts" 2>/dev/null || return 0
  info=$(login_detached "$lab" 2>/dev/null) || return 0
  read -r name since state <<<"$info" || return 0
  [[ $state == running ]] || return 0
  die "a run of lab $lab is going on its login node $login since $since (run $name): 'make bench' reattaches to it and brings it home, 'make lab-down' ends it; lab-up would restart the lab under it"
}

# The output of the run on the login node, from the byte after what CONSOLE holds (this
# machine's copy) to its end, shown and appended to CONSOLE: no byte twice, none lost.
# When the SSH session drops (ssh ends with anything but the run's end), one line says
# so and it reattaches, trying for up to PFSLAB_REATTACH_TIMEOUT seconds (default 600)
# since the drop; the lab's SSH config has ssh notice a dead network within 45 s
# (ServerAliveInterval 15, ServerAliveCountMax 3). Returns the run's exit status. If the
# login node stays out of reach, it fails in one line; the run goes on there and the
# next `make bench` reattaches. FOLLOW_PID: the ssh following, for remote_interrupted.
# Usage: login_follow LAB RUN_NAME CONSOLE
FOLLOW_PID=""
login_follow() {
  local lab=$1 name=$2 console=$3 login d limit window="" rc status size started left
  limit=${PFSLAB_REATTACH_TIMEOUT:-600}
  [[ $limit =~ ^[1-9][0-9]*$ ]] || die "PFSLAB_REATTACH_TIMEOUT=$limit is not allowed; give a number of seconds above 0 (default 600)"
  login=$(login_node "$lab")
  d=$(login_detached_dir "$lab")
  touch "$console"
  while :; do
    size=$(stat -c %s "$console")
    started=$SECONDS
    rc=0
    login_follow_once "$lab" "$login" "$d" "$name" "$console" "$size" || rc=$?
    if ((rc == 0)) && status=$(remote_ssh "$lab" "$login" "cat '$d/status' 2>/dev/null || echo none"); then
      break
    fi
    ((rc != 4)) || die "login node $login no longer records run $name ($d): it was ended there (lab-down?); what it brought home stays in $(dirname "$console")"
    ((rc != 0)) || rc=255
    # A session that followed for a while, or brought output, starts a new retry window;
    # one that drops at once counts against the window already open.
    if [[ -z $window ]] || (($(stat -c %s "$console") > size || SECONDS - started >= 60)); then window=$SECONDS; fi
    log "the SSH session following the run on login node $login dropped (exit status $rc): reattaching, for up to $limit s (PFSLAB_REATTACH_TIMEOUT)"
    until ((SECONDS - window < limit)) && remote_ssh "$lab" "$login" true 2>/dev/null; do
      left=$((limit - (SECONDS - window)))
      ((left > 0)) || die "could not reattach to run $name on login node $login within $limit s (PFSLAB_REATTACH_TIMEOUT); the run goes on there: run 'make bench' again to reattach and bring it home"
      sleep $((left < 5 ? left : 5))
    done
    log "reattached to run $name on login node $login: its output resumes at byte $(stat -c %s "$console")"
  done
  [[ $status =~ ^[0-9]+$ ]] || { log "run $name on login node $login ended without an exit status (its process was killed, or the login node restarted)"; return 1; }
  return "$status"
}

# One SSH session following the run: its output from byte OFFSET+1 until the run's
# process ends (tail --pid), read here line by line. The ssh writes into a pipe this shell
# reads, so one outliving a killed make bench dies at its next line instead of writing
# into CONSOLE. Status: 0 the run ended, 4 no such run there, else the session dropped.
login_follow_once() {
  local lab=$1 login=$2 d=$3 name=$4 console=$5 offset=$6 fd line opts
  mapfile -t opts < <(remote_opts "$lab")
  exec {fd}< <(exec ssh -n "${opts[@]}" "$(remote_target "$lab" "$login")" \
    "d='$d'; test \"\$(cat \"\$d/run\" 2>/dev/null)\" = '$name' || exit 4; p=\$(cat \"\$d/pid\" 2>/dev/null); if test ! -e \"\$d/status\" && test -n \"\$p\" && grep -qaF -- '$name' /proc/\$p/cmdline 2>/dev/null; then exec tail -c +$((offset + 1)) --pid=\$p -f \"\$d/console.log\"; else exec tail -c +$((offset + 1)) \"\$d/console.log\"; fi")
  FOLLOW_PID=$!
  while LC_ALL=C IFS= read -r -u "$fd" line; do
    printf '%s\n' "$line" | tee -a "$console"
  done
  exec {fd}<&-
  wait "$FOLLOW_PID" || return
  # The run's last line, unterminated; one cut by a drop is not shown: the next session
  # sends it whole.
  [[ -z $line ]] || printf '%s' "$line" | tee -a "$console"
}

# Run NAME's record on the login node removed once the run is home (its run directory
# gone from there); kept while it is not, so the next `make bench` brings it home.
login_forget_detached() {
  local lab=$1 name=$2
  remote_ssh "$lab" "$(login_node "$lab")" "test -d '$REMOTE_ROOT/build/runs/$lab/$name' || rm -rf '$(login_detached_dir "$lab")'" || true
}

# Wait (up to SECONDS) for the recorded run to write its exit status.
login_wait_ended() {
  local lab=$1 limit=$2 start=$SECONDS
  while ((SECONDS - start < limit)); do
    remote_ssh "$lab" "$(login_node "$lab")" "test -e '$(login_detached_dir "$lab")/status' || ! test -e '$(login_detached_dir "$lab")/run'" 2>/dev/null && return 0
    sleep 1
  done
  return 1
}

# Unpack a tar archive made on a lab node into DEST: only plain files and folders, every
# name inside DEST (none absolute, no ..), owners and setuid/setgid bits not taken from
# it (tar as root would keep them). Anything else is refused in one line naming up to
# three members, before a byte is unpacked. Usage: untar_plain ARCHIVE DEST
untar_plain() {
  local archive=$1 dest=$2 listing names bad
  listing=$(tar -tvf "$archive") || { log "$archive is not a tar archive"; return 1; }
  names=$(tar -tf "$archive" 2>/dev/null)
  bad=$({
    awk '$1 !~ /^[-d]/ {sub(/^[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print}' <<<"$listing"
    grep -E '^/|(^|/)\.\.(/|$)' <<<"$names" || true
  } | head -n 3 | paste -sd';' -)
  if [[ -n $bad ]]; then
    log "refused to unpack into $dest: members that are not plain files or folders inside it ($bad); allowed: files and folders only"
    return 1
  fi
  tar -C "$dest" -xf "$archive" --no-same-owner --no-same-permissions
}

# The run directory brought home whole (then removed from the login node), through a
# private file next to it and untar_plain.
login_fetch_run() {
  local lab=$1 name=$2 dest=$3 login tmp ok=""
  login=$(login_node "$lab")
  remote_ssh "$lab" "$login" "test -d '$REMOTE_ROOT/build/runs/$lab/$name'" 2>/dev/null || {
    log "the login node $login has no run $name to bring home"
    return 1
  }
  mkdir -p "$dest"
  tmp=$(mktemp "$(dirname "$dest")/.fetch-$name.XXXXXX")
  if remote_ssh "$lab" "$login" "tar -C '$REMOTE_ROOT/build/runs/$lab/$name' -cf - ." >"$tmp" && untar_plain "$tmp" "$dest"; then
    ok=1
  fi
  rm -f "$tmp"
  if [[ -n $ok ]]; then
    remote_ssh "$lab" "$login" "rm -rf '$REMOTE_ROOT/build/runs/$lab/$name'" || true
    log "brought the run home from $login: $dest"
  else
    log "could not bring the whole run home from $login:$REMOTE_ROOT/build/runs/$lab/$name (it stays there)"
    return 1
  fi
}

# A run of the lab still going on its login node, ended (lab-down, an interrupted bench).
remote_stop_bench() {
  local lab=$1 login
  login=$(login_node "$lab")
  [[ -n $login ]] || return 0
  remote_ssh "$lab" "$login" "test -x '$REMOTE_ROOT/scripts/lab' && cd '$REMOTE_ROOT' && scripts/lab stop-bench $lab" >&2 2>/dev/null || true
}

# Every node's processes that use the lab's file system (scripts/host-end-processes,
# sent from this checkout): what a run started through SSH and left behind.
remote_end_lab_processes() {
  local lab=$1 mount node
  mount=$(jq -r '.filesystem.mount' "$(remote_inv "$lab")")
  for node in $(remote_nodes "$lab"); do
    remote_ssh_in "$lab" "$node" "bash -s -- $(printf '%q' "$mount")" <"$PFSLAB_ROOT/scripts/host-end-processes" 2>&1 |
      sed "s/^/[${PFSLAB_LOG_TAG:-lab}] $node: /" >&2 || log "could not end what uses the file system on $node (ignored)"
  done
}
