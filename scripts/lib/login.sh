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

# The mark of this lab instance's inner key in authorized_keys.
login_key_mark() { echo "pfslab-inner lab=$1 instance=$(jq -r '.instance.id // "unknown"' "$(remote_dir "$1")/lab.json" 2>/dev/null || echo unknown)"; }

# The kit on every node must be this checkout's (the image's digest: the manifest's
# sha256, scripts/lib/images.sh): the roles run from it, and the login node runs the
# tests, references and parsers the user reads here. A node whose kit differs gets this
# checkout's (packer/scripts/install-kit.sh sync: the image build's own unpack and
# checks), and the log says so. The archive goes to a folder of a random name the node
# makes (mkdir fails on anything already there, so nothing another user planted in /tmp
# is used), and its sha256 goes on the command line: install-kit.sh refuses an archive
# that differs before it unpacks anything.
remote_kit_sync() {
  local lab=$1 want archive="" sum="" node have dir opts
  # shellcheck source=scripts/lib/images.sh
  source "$PFSLAB_ROOT/scripts/lib/images.sh"
  want=$(image_digest)
  for node in $(remote_nodes "$lab"); do
    have=$(remote_ssh "$lab" "$node" "sha256sum 2>/dev/null <'$REMOTE_ROOT/.pfslab-manifest' | cut -d' ' -f1") || have=
    [[ $have == "$want" ]] && continue
    log "the kit on $node (${have:0:12}${have:+ }at $REMOTE_ROOT) is not this checkout's (${want:0:12}): unpacking this checkout's there"
    if [[ -z $archive ]]; then
      # In the lab's state, not /tmp: a sync stopped part way (remote_timed) leaves it
      # where lab-down removes it.
      archive=$(mktemp "$(remote_dir "$lab")/kit-sync.XXXXXX")
      kit_archive "$archive"
      sum=$(sha256sum <"$archive")
      sum=${sum%% *}
    fi
    # Only a name (random, made here); the node's mkdir creates it or fails.
    dir=$(mktemp -u /tmp/pfslab-kit-sync.XXXXXXXXXXXX)
    mapfile -t opts < <(remote_opts "$lab")
    # shellcheck disable=SC2029 # the commands are meant to run on the node
    if ! remote_timed "$lab" "$node" "copying this checkout's kit" PFSLAB_COPY_TIMEOUT 600 \
      ssh "${opts[@]}" "$(remote_target "$lab" "$node")" "umask 077 && mkdir '$dir' && cat >'$dir/kit.tar.gz'" <"$archive" ||
      ! remote_timed "$lab" "$node" "unpacking this checkout's kit" PFSLAB_COPY_TIMEOUT 600 \
        ssh "${opts[@]}" "$(remote_target "$lab" "$node")" "PFSLAB_KIT_ARCHIVE='$dir/kit.tar.gz' KIT='$REMOTE_ROOT' bash -s sync $want $sum; rc=\$?; rm -rf '$dir'; exit \$rc" \
        <"$PFSLAB_ROOT/packer/scripts/install-kit.sh" >&2; then
      rm -f "$archive"
      die "could not unpack this checkout's kit on $node of lab $lab; see the lines above"
    fi
  done
  [[ -z $archive ]] || rm -f "$archive"
  log "every node of lab $lab runs this checkout's kit (${want:0:12})"
}

# The login node can run the kit's commands (its image is a client image of this kit).
login_kit() {
  local lab=$1 login
  login=$(login_node "$lab")
  remote_ssh "$lab" "$login" "test -x '$REMOTE_ROOT/.venv/bin/pfslab' && test -x '$REMOTE_ROOT/.venv/bin/reframe'" ||
    die "login node $login has no kit environment ($REMOTE_ROOT/.venv with pfslab and reframe): its image must be a client image of this kit (packer/scripts/toolchain.sh: toolchain=distro or on)"
}

# The lab's inner key: made on the login node (the private half never leaves it), its
# public half authorised on every node for the login node's lab address only.
login_inner_key() {
  local lab=$1 login dir pub from mark line node ktype kbody
  login=$(login_node "$lab")
  dir=$(login_root "$lab")/ssh
  mark=$(login_key_mark "$lab")
  pub=$(remote_ssh "$lab" "$login" "umask 077 && mkdir -p '$dir' && chmod 700 '$dir' && { test -s '$dir/id_ed25519' || ssh-keygen -q -t ed25519 -N '' -C '$mark' -f '$dir/id_ed25519' >/dev/null; } && cat '$dir/id_ed25519.pub'") ||
    die "could not make the lab's inner key on login node $login"
  from=$(jq -r --arg n "$login" '.nodes[] | select(.name == $n) | .address' "$(remote_inv "$lab")")
  read -r ktype kbody _ <<<"$pub"
  line="from=\"$from\",no-agent-forwarding,no-port-forwarding,no-X11-forwarding $ktype $kbody $mark"
  for node in $(remote_nodes "$lab"); do
    # Replaces an older key of this lab instance (a login node that was rebuilt).
    remote_ssh "$lab" "$node" "umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && { grep -qxF '$line' ~/.ssh/authorized_keys || { { grep -vF '$mark' ~/.ssh/authorized_keys || true; } >~/.ssh/authorized_keys.pfslab && echo '$line' >>~/.ssh/authorized_keys.pfslab && mv ~/.ssh/authorized_keys.pfslab ~/.ssh/authorized_keys; }; }" ||
      remote_step_failed "$lab" "$node" $? "authorising the lab's inner key"
  done
  log "the lab's inner key (made on $login, never copied off it) is authorised on every node for $from only"
}

# The lab's state as the login node must see it, shipped there (replacing the last copy).
login_ship_state() {
  local lab=$1 login stage inside dir
  login=$(login_node "$lab")
  dir=$(login_root "$lab")
  stage=$(mktemp -d)
  mkdir -p "$stage/$lab/ssh"
  printf '%s\n' "$lab" >"$stage/active-lab"
  inside=$stage/$lab/inventory.json
  jq --arg login "$login" --arg key "$dir/ssh/id_ed25519" --arg known "$dir/ssh/known_hosts" \
    '.nodes |= map(.ssh_address = .address | .ssh_jump = null) | .ssh.key = $key | .ssh.known_hosts = $known | .inside = $login' \
    "$(remote_inv "$lab")" >"$inside"
  cp "$(remote_dir "$lab")/lab.json" "$stage/$lab/lab.json"
  [[ ! -s $(remote_dir "$lab")/calibration.json ]] || cp "$(remote_dir "$lab")/calibration.json" "$stage/$lab/"
  cp "$(remote_dir "$lab")/ssh/known_hosts" "$stage/$lab/ssh/known_hosts"
  ssh_config_text "$inside" "$dir/ssh" "$stage/$lab/ssh/known_hosts" "$(remote_key_policy "$lab")" >"$stage/$lab/ssh/config"
  chmod 700 "$stage/$lab/ssh"
  chmod 600 "$stage/$lab/ssh/"*
  tar -C "$stage" -cf - . | remote_ssh_in "$lab" "$login" "umask 077 && mkdir -p '$REMOTE_ROOT/build' && tar -C '$REMOTE_ROOT/build' -xf - --no-same-owner" ||
    { rm -rf "$stage"; remote_step_failed "$lab" "$login" 255 "copying the lab's state to the login node"; }
  rm -rf "$stage"
}

# Every node reached from the login node, as the benchmarks will reach them.
login_check() {
  local lab=$1 login
  login=$(login_node "$lab")
  remote_ssh "$lab" "$login" "cd '$REMOTE_ROOT' && for n in \$(jq -r '.nodes[].name' build/$lab/inventory.json); do scripts/lab-rsh -n \"\$n\" true 2>&1 | tail -n 1 | sed \"s/^/\$n: /\" | grep . && exit 1; done; exit 0" >&2 ||
    die "login node $login cannot reach every node of lab $lab with the lab's inner key (the line above); run 'make lab-up LAB=$lab' again"
  log "login node $login reaches every node of lab $lab"
}

# The login node ready to launch benchmarks: the kit, the inner key, the lab's state.
login_setup() {
  local lab=$1
  if [[ -z $(login_node "$lab") ]]; then
    log "lab $lab has no client node: no login node to launch benchmarks from"
    return 0
  fi
  login_kit "$lab"
  login_inner_key "$lab"
  login_ship_state "$lab"
  login_check "$lab"
}

# The lab's calibration (benchmark.calibrate), measured from the login node through the
# lab's first client at the first lab-up, and brought home.
login_calibrate() {
  local lab=$1 force=${2:-} login file
  file=$(remote_dir "$lab")/calibration.json
  [[ $(lab_field "$lab" benchmark.calibrate) == true ]] || return 0
  [[ -z $force && -s $file ]] && { log "calibration of lab $lab kept from $(jq -r .measured_at "$file") ('make calibrate' runs it again)"; return 0; }
  login=$(login_node "$lab")
  [[ -n $login ]] || die "lab $lab has no client node to calibrate through"
  log "calibrating lab $lab from its login node $login: fio probes through its first client (reframe/references/policy.yaml)"
  remote_ssh "$lab" "$login" "cd '$REMOTE_ROOT' && PFSLAB_LAB=$lab .venv/bin/pfslab calibrate $lab" 2>&1 | sed 's/^/[lab] /' >&2
  [[ ${PIPESTATUS[0]} -eq 0 ]] || die "the calibration of lab $lab failed on its login node $login (lines above)"
  remote_ssh "$lab" "$login" "cat '$(login_root "$lab")/calibration.json'" >"$file.new" ||
    die "could not bring the calibration of lab $lab home from $login"
  mv "$file.new" "$file"
  log "calibration kept in $file; every verdict of the lab shows it"
}

# What the lab wrote on a node that outlives it (existing hosts), removed: the first
# boot's files (node config, inventory, hosts lines, profile), the roles' state, run and
# log dirs, the drive links, the inner key's authorisation and, on the login node, the
# lab's state and runs (already brought home). The image's own files stay. The removal
# is scripts/host-forget, sent from this checkout and run there.
login_forget() {
  local lab=$1 node mark mount words=()
  mark=$(login_key_mark "$lab")
  mount=$(jq -r '.filesystem.mount' "$(remote_inv "$lab")")
  # Exactly the lines the first boot appended to /etc/hosts (the lab plan's hosts_file).
  mapfile -t words < <(jq -r --arg lab "$lab" '"# pfslab hosts of lab \($lab)", (.nodes[] | "\(.address) \(.name)")' "$(remote_inv "$lab")")
  words=("$lab" "$mark" "$mount" "$REMOTE_ROOT" "${words[@]}")
  for node in $(remote_nodes "$lab"); do
    remote_ssh_in "$lab" "$node" "bash -s -- $(printf '%q ' "${words[@]}")" <"$PFSLAB_ROOT/scripts/host-forget" >&2 ||
      log "could not remove what lab $lab wrote on $node (ignored: see above)"
  done
  log "removed what lab $lab wrote on its hosts (first-boot files, role state, the inner key's authorisation)"
}

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
