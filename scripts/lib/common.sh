# shellcheck shell=bash
# Shared shell helpers: logging, one-line failures, preconditions, node config.
# Sourced by every script of the kit; defines functions only.

PFSLAB_ROOT=${PFSLAB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export PFSLAB_ROOT

# shellcheck source=scripts/lib/ere.sh
source "$(dirname "${BASH_SOURCE[0]}")/ere.sh"

# Messages go to stderr so that stdout stays data (JSON, paths) for callers.
log() { printf '%s %s\n' "[${PFSLAB_LOG_TAG:-pfslab}]" "$*" >&2; }

# One line, naming what is wrong, then exit 2 (bad input / precondition).
die() {
  printf '%s %s\n' "[${PFSLAB_LOG_TAG:-pfslab}] error:" "$*" >&2
  exit 2
}

# One command at a time changes or measures a lab (lab-up, lab-down, calibrate, bench):
# two at once would run Terraform on one state, restart daemons under a run, or mix
# two runs' figures. The lock is held by a helper process (flock on build/<lab>/lock)
# that lives as long as this command, so daemons the command starts never inherit it,
# and one that died (even by SIGKILL) holds nothing: a stale lock never blocks.
# Usage: lock_lab LAB WHAT  (WHAT names the command in the refusal others get)
# Returns 1, printing nothing, when another command holds the lock (lab_lock_holder
# says which); call it where build/<lab> is made anyway.
lock_lab() {
  local lab=$1 what=$2 file answer=""
  require_cmd flock tail
  file=$PFSLAB_ROOT/build/$lab/lock
  mkdir -p "${file%/*}"
  # <> opens without truncating: the holder's line stays readable while it runs.
  read -r answer < <(
    exec 9<>"$file"
    # The holder of a command that just ended lets go within its poll (0.2 s): a
    # command run right after it waits for that rather than being refused.
    flock -w 2 9 || { echo busy; exit 0; }
    printf '%s %s %s\n' "$$" "$(date -u +%H:%M:%S)" "$what" >"$file"
    echo ok
    # tail holds the lock (fd 9) until this command's process is gone.
    exec tail --pid="$$" -s 0.2 -f /dev/null >/dev/null 2>&1
  ) || true
  [[ $answer == ok ]]
}

# "WHAT (pid PID, since HH:MM:SS UTC)" of the command holding lab LAB's lock.
lab_lock_holder() {
  local pid since what
  read -r pid since what <"$PFSLAB_ROOT/build/$1/lock" 2>/dev/null || true
  printf '%s (pid %s, since %s UTC)\n' "${what:-another command}" "${pid:-?}" "${since:-?}"
}

# lock_lab, or one line naming the command that holds the lab.
lock_lab_or_die() {
  lock_lab "$1" "$2" || lab_busy "$1"
}

# One line naming the command that holds lab LAB's lock, then exit 2.
lab_busy() {
  die "lab $1 is busy: its $(lab_lock_holder "$1") is still running; wait for it to end (or end it), then run this again"
}

# Whether lab LAB's lock is free now (taken and let go at once): a command that hands
# the lab to a process it starts (a detached run, which takes the lock itself) asks
# first, so a busy lab is refused before anything is made.
lab_unlocked() {
  local file=$PFSLAB_ROOT/build/$1/lock
  [[ -e $file ]] || return 0
  (
    exec 9<>"$file"
    flock -w 2 9
  )
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

# The checkout's path goes into shell lines and MPI's agent: one whose characters
# would split or quote wrongly is refused before anything is installed or made
# (pfslab/names.py states what is allowed; the system's python3 reads it, as the
# kit's environment may not exist yet).
require_usable_checkout() {
  local problem
  problem=$(cd "$PFSLAB_ROOT" && python3 -m pfslab.names checkout-problem "$(realpath "$PFSLAB_ROOT")") || die "$problem"
}

require_fuse() {
  [[ -c /dev/fuse ]] || die "/dev/fuse is missing; the lab's ceph-fuse clients need FUSE (load the fuse module or give the container /dev/fuse)"
}

# Terraform's CLI settings (TF_CLI_CONFIG_FILE): terraform/terraformrc, and when
# PFSLAB_TF_PROVIDERS names a folder of providers (an air-gapped site's filesystem
# mirror, <dir>/registry.terraform.io/<namespace>/<type>/<version>/<os_arch>/), a copy
# of it under build/ that installs every provider from that folder and none from the
# registry. Either way `terraform init` checks what it installs against the committed
# .terraform.lock.hcl.
use_tf_cli_config() {
  export TF_CLI_CONFIG_FILE=$PFSLAB_ROOT/terraform/terraformrc
  local mirror=${PFSLAB_TF_PROVIDERS:-} config=$PFSLAB_ROOT/build/terraformrc
  [[ -n $mirror ]] || return 0
  [[ -d $mirror && $mirror == /* && $mirror != *'"'* ]] ||
    die "PFSLAB_TF_PROVIDERS=$mirror is not an absolute path of a folder (a Terraform filesystem mirror: <dir>/registry.terraform.io/<namespace>/<type>/<version>/<os_arch>/)"
  mkdir -p "$PFSLAB_ROOT/build"
  {
    cat "$PFSLAB_ROOT/terraform/terraformrc"
    printf '\n# Written by use_tf_cli_config (scripts/lib/common.sh) from PFSLAB_TF_PROVIDERS.\n'
    printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' "$mirror"
  } >"$config.$$"
  mv -f "$config.$$" "$config"
  export TF_CLI_CONFIG_FILE=$config
}

# Every lab as lab-up resolves it for TARGET, one JSON document a line (what
# `pfslab lab export` writes as <lab>@<target>.json).
# Usage: resolved_labs TARGET
resolved_labs() {
  local target=$1 dir
  dir=$(mktemp -d)
  pfslab lab export "$dir" >/dev/null
  shopt -s nullglob
  local files=("$dir"/*@"$target".json)
  shopt -u nullglob
  ((${#files[@]} == 0)) || jq -c . "${files[@]}"
  rm -rf "$dir"
}

# Why a Terraform directory's providers cannot be installed here, from its `terraform
# init` log (empty: they can, or init failed for another reason).
# A package that does not match the lock file is never "unavailable": it is an error.
# Usage: tf_providers_unavailable DIR INIT_LOG
tf_providers_unavailable() {
  local dir=$1 text
  text=$(tr '\n' ' ' <"$2" | tr -s ' ')
  [[ $text == *"doesn't match any of the checksums"* ]] && return 0
  if [[ $text == *"was not found in any of the search locations"* ]]; then
    echo "its providers ($(providers_of "$dir")) are not in PFSLAB_TF_PROVIDERS=${PFSLAB_TF_PROVIDERS:-}"
  elif [[ $text == *"Failed to query available provider packages"* || $text == *"could not connect to registry"* ]]; then
    echo "its providers ($(providers_of "$dir")) cannot be installed: no registry access and no PFSLAB_TF_PROVIDERS folder holding them"
  fi
}

# The providers a directory declares (required_providers sources), comma-separated.
providers_of() { sed -n 's/^ *source *= *"\([^./"][^"]*\)".*/\1/p' "$1"/*.tf | sort -u | paste -sd, -; }

# Downloads are checked against a value pinned in the kit before anything unpacks,
# runs or trusts them. Each check fails with one line: what, where the pin lives, the
# expected and the actual value.
#
# verify_sha256 FILE WANT WHAT PINNED_IN
verify_sha256() {
  local file=$1 want=${2,,} what=$3 pinned=$4 have
  [[ $want =~ ^[0-9a-f]{64}$ ]] || die "$what: no sha256 pinned ($pinned); refusing an unverified download"
  have=$(sha256sum "$file" | cut -d' ' -f1)
  [[ $have == "$want" ]] || die "$what: sha256 mismatch: expected $want ($pinned), got $have; not used"
}

# The fingerprints of the primary keys in an OpenPGP key file, comma-separated (empty:
# none). gpg only reads the file (--show-keys, a scratch home): nothing is imported.
key_fingerprints() {
  local file=$1 home
  home=$(mktemp -d)
  gpg --homedir "$home" --batch --with-colons --show-keys "$file" 2>/dev/null |
    awk -F: '$1 == "pub" {p = 1; next} p && $1 == "fpr" {print $10; p = 0}' | paste -sd, - || true
  rm -rf "$home"
}

# verify_key_fingerprint KEYFILE WANT WHAT PINNED_IN: the key file holds exactly one
# primary key, the one with fingerprint WANT (40 hex digits, spaces allowed).
verify_key_fingerprint() {
  local file=$1 want=${2//[[:space:]]/} what=$3 pinned=$4 have
  want=${want^^}
  [[ $want =~ ^[0-9A-F]{40}$ ]] || die "$what: no key fingerprint pinned ($pinned); refusing to trust an unverified key"
  have=$(key_fingerprints "$file")
  [[ $have == "$want" ]] || die "$what: key fingerprint mismatch: expected $want ($pinned), got ${have:-no key}; not trusted"
}

# The kit's own command (pfslab/cli.py), installed into .venv by `make deps`.
pfslab() {
  local cli=$PFSLAB_ROOT/.venv/bin/pfslab
  [[ -x $cli ]] || die "the kit's command $cli is missing; run 'make deps' first"
  "$cli" "$@"
}

# The same in place of this script (a signal sent to it reaches the kit's command).
exec_pfslab() {
  local cli=$PFSLAB_ROOT/.venv/bin/pfslab
  [[ -x $cli ]] || die "the kit's command $cli is missing; run 'make deps' first"
  exec "$cli" "$@"
}

# A lab name is checked before any path is built from it (build/<lab>, which lab-down
# removes, /run/pfslab/<lab>): the schema's own pattern for `name`, read once.
check_lab_name() {
  if [[ -z ${PFSLAB_LAB_NAME_PATTERN:-} ]]; then
    PFSLAB_LAB_NAME_PATTERN=$(jq -r '.properties.name.pattern' "$PFSLAB_ROOT/labs/schema.json")
  fi
  [[ $1 =~ $PFSLAB_LAB_NAME_PATTERN ]] ||
    die "LAB=$1 is not a lab name (lower-case letters, digits, '.', '+', '-', at most 40, starting with a letter; pattern $PFSLAB_LAB_NAME_PATTERN)"
}

# A field (dotted path) of the lab as this command resolved it: PFSLAB_LAB_JSON (set by
# scripts/lab, once per command), else build/<lab>/lab.json (the lab as it was brought
# up), else the lab resolved now. Strings print bare, other values as compact JSON.
lab_field() {
  local lab=$1 field=$2 resolved=${PFSLAB_LAB_JSON:-}
  check_lab_name "$lab"
  if [[ ! -s $resolved || $(jq -r .name "$resolved") != "$lab" ]]; then
    resolved=$PFSLAB_ROOT/build/$lab/lab.json
  fi
  if [[ -s $resolved ]]; then
    jq -cr --arg f "$field" 'getpath($f | split(".")) as $v | if $v == null then error("lab \(.name) has no field \($f)") else $v end' "$resolved"
  else
    pfslab lab get "$lab" "$field"
  fi
}

# A target is a folder, targets/<target>/: target.json, its adapter (adapter.sh), its
# Terraform root and module. The kit lists the folders; nothing else names targets.
target_dir() { echo "$PFSLAB_ROOT/targets/$1"; }
target_json() { echo "$PFSLAB_ROOT/targets/$1/target.json"; }
# Every target's name, one a line, in folder order.
target_names() {
  local file
  for file in "$PFSLAB_ROOT"/targets/*/target.json; do
    [[ -e $file ]] && basename "$(dirname "$file")"
  done
  return 0
}

# Whether the target's nodes are machines reached over SSH (targets/<target>/target.json).
target_remote() { [[ $(jq -r .remote "$(target_json "$1")") == true ]]; }

# Whether the target's nodes are network namespaces of this host (target local): what
# the kit does differently for them asks this, never the target's name.
target_namespaces() { [[ $(jq -r .namespaces "$(target_json "$1")") == true ]]; }

# Whether the kit provisions and installs the target's labs; false: they are already
# there (target site) and lab-up only checks them, as the invoking user.
# (jq's // would turn a false into the default: only a missing field means true.)
target_provisions() { [[ $(jq -r 'if has("provisions") then .provisions else true end' "$(target_json "$1")") == true ]]; }

# Whether scripts/bench runs the target's labs detached from the terminal and follows
# them (scripts/lib/detached.sh): their runs start where the user works over their own
# SSH (a site's submit node), which may drop mid-run.
target_detached_runs() { [[ $(jq -r '.detached_runs // false' "$(target_json "$1")") == true ]]; }

# Source the target's adapter (targets/<target>/adapter.sh): the target_* functions
# scripts/lab and scripts/lib/remote.sh call for what differs between targets.
use_target() {
  local target=$1
  [[ -s $(target_json "$target") && -s $(target_dir "$target")/adapter.sh ]] ||
    die "target '$target' has no targets/$target/target.json or targets/$target/adapter.sh"
  # shellcheck source=/dev/null
  source "$(target_dir "$target")/adapter.sh"
}

# Read a field of the node's config (JSON written by the lab plan): cfg '.node.name'
cfg() {
  jq -er "$1" "${PFSLAB_NODE_CONFIG:?PFSLAB_NODE_CONFIG is not set}"
}

# Like cfg, but prints nothing (and succeeds) when the field is absent or null.
cfg_opt() {
  jq -r "$1 // empty" "${PFSLAB_NODE_CONFIG:?PFSLAB_NODE_CONFIG is not set}"
}

# True when process PID lives. A zombie does not: it is dead and waits to be reaped,
# which takes a while where PID 1 is not an init that reaps at once (this machine's),
# so a killed daemon would otherwise still look alive to kill -0.
proc_alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The state follows the command name, which is in parentheses and may hold spaces.
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# True when the pid in a pid file belongs to a live process.
pid_alive() {
  local pidfile=$1 pid
  [[ -s $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] && proc_alive "$pid"
}

# Stop the process of a pid file: TERM, wait up to $2 seconds, then KILL.
stop_pidfile() {
  local pidfile=$1 grace=${2:-5} pid waited=0
  [[ -s $pidfile ]] || return 0
  pid=$(<"$pidfile")
  if [[ $pid =~ ^[0-9]+$ ]] && proc_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    while proc_alive "$pid" && ((waited < grace * 10)); do
      sleep 0.1
      waited=$((waited + 1))
    done
    if proc_alive "$pid"; then
      log "pid $pid ($(basename "$pidfile")) ignored TERM for ${grace}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      waited=0
      # A process in an uninterruptible wait dies only when the wait ends: do not hang on it.
      while proc_alive "$pid" && ((waited < 100)); do
        sleep 0.05
        waited=$((waited + 1))
      done
      proc_alive "$pid" && log "pid $pid ($(basename "$pidfile")) is still dying (an uninterruptible wait); going on"
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

# True when something is mounted at $1. Read from mountinfo, not by looking at the
# path: looking at a hung FUSE mount would hang the caller. (PFSLAB_MOUNTS names a
# file of "TARGET ..." lines to read instead: the role tests' stand-in mount table.)
is_mounted() {
  if [[ -n ${PFSLAB_MOUNTS:-} ]]; then
    awk -v t="$1" '$1 == t {found = 1} END {exit !found}' "$PFSLAB_MOUNTS" 2>/dev/null
  else
    awk -v t="$1" '$5 == t {found = 1} END {exit !found}' /proc/self/mountinfo
  fi
}

# The fusectl connection id of the FUSE mount at $1 (empty when it is not FUSE).
fuse_connection() {
  awk -v t="$1" '$5 == t { for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) ~ /^fuse/) { split($3, d, ":"); print d[2] } ; break } }' \
    /proc/self/mountinfo | head -n 1
}

# Abort a FUSE connection: every request waiting on it fails at once, so nothing stays
# stuck on a daemon that no longer answers. fusectl is mounted for this if it is not.
fuse_abort() {
  local id=$1 ctl=/sys/fs/fuse/connections mounted=""
  if [[ ! -e $ctl/$id/abort ]] && ! is_mounted "$ctl"; then
    mount -t fusectl fusectl "$ctl" 2>/dev/null && mounted=1
  fi
  [[ -e $ctl/$id/abort ]] && echo 1 >"$ctl/$id/abort"
  if [[ -n $mounted ]]; then umount "$ctl" 2>/dev/null || true; fi
}

# Run a command, waiting at most $1 seconds for it; 124 when it did not finish. Unlike
# timeout(1), it never waits on a process that cannot die (a process stuck in a FUSE
# request ignores SIGKILL until the request ends): that one is left to finish later.
bounded() {
  local seconds=$1 pid waited=0
  shift
  "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if ((waited >= seconds * 10)); then
      kill -KILL "$pid" 2>/dev/null || true
      return 124
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  wait "$pid"
}

# Unmount $1 within about $2 seconds (default 10) whatever the file system's state:
# a plain unmount first; if it does not finish or fails, the FUSE connection is aborted
# (for FUSE mounts) and the mount detached lazily. Says what it had to force.
unmount_bounded() {
  local target=$1 grace=${2:-10} conn
  is_mounted "$target" || return 0
  conn=$(fuse_connection "$target")
  bounded "$grace" umount -c "$target" 2>/dev/null && return 0
  if [[ -n $conn ]]; then
    log "forced: $target did not unmount in ${grace}s; aborting its FUSE connection $conn"
    fuse_abort "$conn"
  fi
  bounded "$grace" umount -c "$target" 2>/dev/null && return 0
  log "forced: detaching $target lazily"
  bounded "$grace" umount -l -c "$target"
}

# The family file of a file system type (families/<fs>/family.json); one line naming
# the known ones when there is none. Usage: family_file FILESYSTEM
family_file() {
  local file=$PFSLAB_ROOT/families/$1/family.json known
  if [[ ! -s $file ]]; then
    known=$(jq -r .filesystem "$PFSLAB_ROOT"/families/*/family.json | paste -sd, | sed 's/,/, /g')
    die "unknown file system '$1': one of $known (families/<fs>/family.json)"
  fi
  printf '%s\n' "$file"
}

# The folder of the family named FAMILY (its family.json's family, e.g. ceph for
# families/cephfs); nothing when no family has that name. Usage: family_dir FAMILY
family_dir() {
  local files=("$PFSLAB_ROOT"/families/*/family.json) file
  [[ -f ${files[0]} ]] || return 0
  file=$(jq -rn --arg f "$1" 'first(inputs | select(.family == $f) | input_filename) // empty' "${files[@]}")
  [[ -z $file ]] || dirname "$file"
}

# Whether ROLE mounts the file system and runs benchmarks: "client": true in its family
# file (families/*/family.json). Usage: is_client_role ROLE
is_client_role() {
  if [[ -z ${PFSLAB_CLIENT_ROLES:-} ]]; then
    PFSLAB_CLIENT_ROLES=" $(jq -r '.roles[] | select(.client == true) | .name' "$PFSLAB_ROOT"/families/*/family.json | tr '\n' ' ')"
  fi
  [[ $PFSLAB_CLIENT_ROLES == *" $1 "* ]]
}

# The lab that is up: PFSLAB_LAB, else the one `make lab-up` recorded in build/active-lab
# (pfslab/state.py answers the same for Python). Prints nothing when none is.
active_lab() {
  local lab=${PFSLAB_LAB:-}
  [[ -n $lab ]] || lab=$(cat "${PFSLAB_BUILD:-$PFSLAB_ROOT/build}/active-lab" 2>/dev/null || true)
  [[ -z $lab ]] || check_lab_name "$lab"
  printf '%s' "$lab"
}
