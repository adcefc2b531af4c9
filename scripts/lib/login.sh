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
# Runs are started there (scripts/bench) and brought home whole to build/runs/<lab>/
# (pfslab/lifecycle/login_run.py; the one-line calls at the end of this file).

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

# A run of the lab on its login node: launched detached from the SSH session, followed,
# brought home (pfslab/lifecycle/login_run.py, which make bench runs). What lab-up, lab-down
# and the tests ask of it, through the kit's command with the caller's log tag.
login_run() { PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_REMOTE_ROOT="$REMOTE_ROOT" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" pfslab login "$@"; }
# "NAME SINCE STATE" of the run recorded there (nothing when none). Usage: login_detached LAB
login_detached() { login_run recorded "$1"; }
# Usage: login_launch LAB RUN_NAME [VAR=VALUE...] -- BENCH-ARGS...
login_launch() { login_run launch "$@"; }
# Usage: login_follow LAB RUN_NAME CONSOLE (status: the run's)
login_follow() { login_run follow "$@"; }
# lab-up while a run of the lab goes on its login node: refused in one line naming it.
login_refuse_running() { login_run refuse-running "$1"; }
# Usage: login_fetch_run LAB RUN_NAME DEST
login_fetch_run() { login_run fetch-run "$@"; }
# A run of the lab still going on its login node, ended (lab-down, an interrupted bench).
remote_stop_bench() { login_run stop-bench "$1"; }
# Every node's processes that use the lab's file system (scripts/host-end-processes).
remote_end_lab_processes() { login_run end-lab-processes "$1"; }
