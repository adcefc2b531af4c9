# shellcheck shell=bash
# A cloud or bare-metal lab's nodes reached from the kit's machine over SSH: the helpers
# the bench (scripts/lib/login.sh, scripts/bench, scripts/drop-caches) uses. The bring-up
# itself (SSH config, host keys, first boots, the kit's sync, cluster files, phases, the
# login node, preflight) is the kit's Python: pfslab/lifecycle/remote_up.py (pfslab labctl
# remote STEP LAB), which the functions below that only delegate call.
# Everything comes from build/<lab>/inventory.json and the lab's key under
# build/<lab>/ssh/. Sourced after common.sh; defines functions only.
#
# Environment: PFSLAB_BUILD (default <kit>/build), PFSLAB_REMOTE_ROOT (the kit on the
# nodes, default /opt/pfslab), PFSLAB_COPY_TIMEOUT (seconds one copy to a node may take,
# default 600): see remote_timed; PFSLAB_RESTART_WAIT: see remote_step_failed.

# shellcheck source=scripts/lib/login.sh
source "$PFSLAB_ROOT/scripts/lib/login.sh"

REMOTE_BUILD=${PFSLAB_BUILD:-$PFSLAB_ROOT/build}
REMOTE_ROOT=${PFSLAB_REMOTE_ROOT:-/opt/pfslab}

remote_dir() { echo "$REMOTE_BUILD/$1"; }
remote_inv() { echo "$REMOTE_BUILD/$1/inventory.json"; }

# Every ssh and scp of the kit to a lab's node reads the lab's one SSH config
# (remote_ssh_config) and nothing else: with -F neither ~/.ssh/config nor
# /etc/ssh/ssh_config applies, so no agent forwarding, no other key and no proxy of the
# user's reaches the lab's nodes.
remote_opts() { printf '%s\n' -F "$(remote_dir "$1")/ssh/config"; }

# A node is reached by its name; the lab's SSH config says where and how.
remote_target() { printf '%s\n' "$2"; }

# A step of a remote lab's bring-up in the kit's Python (pfslab/lifecycle/remote_up.py).
# Usage: remote_step STEP LAB
remote_step() {
  PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_REMOTE_ROOT="$REMOTE_ROOT" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" \
    pfslab labctl remote "$1" "$2"
}

# build/<lab>/ssh/config, the kit machine's way in (the lab's key only, host keys pinned).
remote_ssh_config() { remote_step ssh-config "$1"; }

# remote_ssh LAB NODE COMMAND: run a command on a node (stdin closed).
remote_ssh() {
  local lab=$1 node=$2
  shift 2
  local opts
  mapfile -t opts < <(remote_opts "$lab")
  ssh -n "${opts[@]}" "$(remote_target "$lab" "$node")" "$@"
}

# remote_ssh_in LAB NODE COMMAND: the same, with this command's stdin passed on.
remote_ssh_in() {
  local lab=$1 node=$2
  shift 2
  local opts
  mapfile -t opts < <(remote_opts "$lab")
  # shellcheck disable=SC2029 # the command is meant to run on the node
  ssh "${opts[@]}" "$(remote_target "$lab" "$node")" "$@"
}

# ---- reaching the nodes: every failure named, with what to do ---------------------

remote_addr() { jq -r --arg n "$2" '.nodes[] | select(.name == $n) | .ssh_address // .address' "$(remote_inv "$1")"; }
remote_jump() { jq -r --arg n "$2" '.nodes[] | select(.name == $n) | .ssh_jump // empty' "$(remote_inv "$1")"; }

# One line saying why ssh to a node failed and what to do, from ssh's own messages
# (pfslab/lifecycle/reach.py, which the phases' "lost NODE" line uses too).
# Usage: remote_diagnose LAB NODE SSH_OUTPUT
remote_diagnose() {
  PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" pfslab lab diagnose "$1" "$2" <<<"$3"
}

# A step that failed on a node: ssh's own failure (255) means the node went away in the
# middle (restarted, powered off): named as such, not as the step's fault
# (pfslab/lifecycle/phases.py's step_failed, which the role phases use). Always exits 2.
# Usage: remote_step_failed LAB NODE STATUS WHAT
remote_step_failed() {
  PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" pfslab lab step-failed "$@" || true
  exit 2
}

# A step on a node, bounded in time: a node, network or role that hangs would otherwise
# hold lab-up (and the lab's lock) forever. One that runs out is stopped here (its ssh or
# scp; what it started on the node may still finish there) and named in one line: node,
# step, the limit and the variable that raises it; exit 2.
# Usage: remote_timed LAB NODE WHAT LIMIT_VAR DEFAULT COMMAND...  (an external command)
# The defaults are generous on purpose: a role step may legitimately run long (an OSD's
# mkfs, formatting BeeGFS targets, RAID initialisation on large drives: 30 min), a copy
# moves only keys, configs or the kit's archive (10 min even on a slow link).
remote_timed() {
  local lab=$1 node=$2 what=$3 var=$4 default=$5 limit start=$SECONDS rc=0
  limit=${!var:-$default}
  shift 5
  [[ $limit =~ ^[1-9][0-9]*$ ]] || die "$var=$limit is not allowed; give a number of seconds above 0 (default $default)"
  # --foreground: Ctrl-C still reaches ssh; -k: one that ignores TERM is killed.
  timeout --foreground -k 30 "$limit" "$@" || rc=$?
  if ((rc == 124 || rc == 137)) && ((SECONDS - start >= limit)); then
    die "$what on node $node of lab $lab did not finish within ${limit}s, its limit; if it needs longer, run the command again with $var=<seconds> in its environment (default $default)"
  fi
  return "$rc"
}

remote_nodes() { jq -r '.nodes[].name' "$(remote_inv "$1")"; }

# Existing hosts get the first boot their user-data would have run, as a script over SSH.
remote_boot_hosts() { remote_step boot-hosts "$1"; }

# Copy the cluster's files from the bootstrap node (the first node of the first phase)
# to every other node, host to host through this machine (scp -3): secrets never touch
# this machine's disk and are never printed; each node gets only what its roles use
# (pfslab/lifecycle/cluster_copy.py, bounded by PFSLAB_COPY_TIMEOUT).
remote_copy_cluster() {
  PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_REMOTE_ROOT="$REMOTE_ROOT" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" \
    pfslab lab cluster-copy "$1"
}

# Start the roles phase by phase (up), or stop them in reverse phase order (down;
# existing hosts outlive the lab): pfslab/lifecycle/phases.py, each step bounded by
# PFSLAB_ROLE_STEP_TIMEOUT, a failure named as remote_step_failed names it.
# Usage: remote_phases LAB up|down
remote_phases() {
  PFSLAB_BUILD="$REMOTE_BUILD" PFSLAB_REMOTE_ROOT="$REMOTE_ROOT" PFSLAB_LOG_TAG="${PFSLAB_LOG_TAG:-pfslab}" \
    pfslab lab phases "$1" "$2"
}
