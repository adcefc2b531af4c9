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
