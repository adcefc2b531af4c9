# shellcheck shell=bash
# Shared shell helpers: logging, one-line failures, preconditions, node config.
# Sourced by every script of the kit; defines functions only.

PFSLAB_ROOT=${PFSLAB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export PFSLAB_ROOT

# Messages go to stderr so that stdout stays data (JSON, paths) for callers.
log() { printf '%s %s\n' "[${PFSLAB_LOG_TAG:-pfslab}]" "$*" >&2; }

# One line, naming what is wrong, then exit 2 (bad input / precondition).
die() {
  printf '%s %s\n' "[${PFSLAB_LOG_TAG:-pfslab}] error:" "$*" >&2
  exit 2
}

require_root() {
  [[ $(id -u) -eq 0 ]] || die "$1 needs root (it creates network namespaces, mounts and daemons); run it as root or with sudo"
}

require_cmd() {
  local cmd
  for cmd in "$@"; do
    command -v "$cmd" >/dev/null 2>&1 || die "missing command '$cmd'; run 'make deps' first"
  done
}

require_fuse() {
  [[ -c /dev/fuse ]] || die "/dev/fuse is missing; the lab's ceph-fuse clients need FUSE (load the fuse module or give the container /dev/fuse)"
}

# Read a field of the node's config (JSON written by the lab plan): cfg '.node.name'
cfg() {
  jq -er "$1" "${PFSLAB_NODE_CONFIG:?PFSLAB_NODE_CONFIG is not set}"
}

# Like cfg, but prints nothing (and succeeds) when the field is absent or null.
cfg_opt() {
  jq -r "$1 // empty" "${PFSLAB_NODE_CONFIG:?PFSLAB_NODE_CONFIG is not set}"
}

# True when the pid in a pid file belongs to a live process.
pid_alive() {
  local pidfile=$1 pid
  [[ -s $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# Stop the process of a pid file: TERM, wait up to $2 seconds, then KILL.
stop_pidfile() {
  local pidfile=$1 grace=${2:-5} pid waited=0
  [[ -s $pidfile ]] || return 0
  pid=$(<"$pidfile")
  if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < grace * 10)); do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid ($(basename "$pidfile")) ignored TERM for ${grace}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
  fi
  rm -f "$pidfile"
}

# Wait until a command succeeds, polling every 0.25 s, for at most $1 seconds.
wait_for() {
  local timeout=$1 what=$2 start
  shift 2
  start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < timeout)) || {
      log "timed out after ${timeout}s waiting for $what"
      return 1
    }
    sleep 0.25
  done
}

is_mounted() { findmnt -rn --mountpoint "$1" >/dev/null 2>&1; }
