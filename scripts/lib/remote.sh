# shellcheck shell=bash
# The cross-node steps of a cloud or bare-metal lab, run from the kit's machine over
# SSH after `terraform apply` (never through Terraform state or outputs):
#   wait for every node's first boot (cloud-init), or run it on existing hosts;
#   copy the cluster's files (paths.cluster: keys, ceph.conf, monmap, BeeGFS's
#   connAuthFile) from the bootstrap node to the nodes whose roles use them, through
#   this machine, never printed;
#   start the roles phase by phase (the lab plan's `phases`), then scripts/preflight.
# The copy and the phases are the kit's Python (pfslab/lifecycle/cluster_copy.py,
# phases.py, through pfslab/transport/ssh.py).
# Everything comes from build/<lab>/inventory.json and the lab's key under
# build/<lab>/ssh/. Sourced after common.sh; defines functions only.
#
# Environment: PFSLAB_BUILD (default <kit>/build), PFSLAB_REMOTE_ROOT (the kit on the
# nodes, default /opt/pfslab), PFSLAB_BOOT_TIMEOUT (seconds, default 1200),
# PFSLAB_ROLE_STEP_TIMEOUT (seconds one role step may take on a node, default 1800),
# PFSLAB_COPY_TIMEOUT (seconds one copy to a node may take, default 600): see remote_timed;
# PFSLAB_RESTART_WAIT (seconds a node whose connection broke may take to answer again
# before it counts as lost, default 30): see remote_step_failed.

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

# An SSH config for a lab's nodes, from an inventory: per node its SSH address, user
# and the lab's key only (IdentitiesOnly); the nodes without a public address through
# the login node (ProxyJump); host keys checked under the node's name (HostKeyAlias),
# strictly once known_hosts has them (pinned from the cloud's console by
# remote_pin_host_keys, or from the lab file's pins by remote_pin_listed_keys), and
# always strictly on a target with a console (STRICT=strict): a key is learnt on first
# use only from hosts the lab pins no key of. The lab address is an alias too:
# scripts/preflight and job scripts reach nodes by it.
# Usage: ssh_config_text INVENTORY SSH_DIR KNOWN_HOSTS_NOW [STRICT]
#   SSH_DIR is where the config, its known_hosts and (by default) its key live on the
#   machine that uses it; KNOWN_HOSTS_NOW is the known_hosts file to read here.
ssh_config_text() {
  local inv=$1 dir=$2 known_file=$3 strict=${4:-} known=""
  [[ ! -s $known_file ]] || known=$(awk '{print $1}' "$known_file" | sort -u | tr '\n' ' ')
  jq -r --arg d "$dir" --arg known " $known" --arg strict "$strict" '(.ssh.user // "root") as $u | (.ssh.key // "\($d)/id_ed25519") as $k | (.nodes[] | .name as $n |
    "Host \(.name) \(.address)\n  HostName \(.ssh_address // .address)\n  User \($u)\n  HostKeyAlias \(.name)\n" +
    (if .ssh_jump then "  ProxyJump \(.ssh_jump)\n" else "" end) +
    "  StrictHostKeyChecking \(if $strict == "strict" or ($known | contains(" \($n) ")) then "yes" else "accept-new" end)\n"),
    "Host *\n  IdentityFile \($k)\n  IdentitiesOnly yes\n  UserKnownHostsFile \($d)/known_hosts\n  GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  PasswordAuthentication no\n  KbdInteractiveAuthentication no\n  ForwardAgent no\n  ForwardX11 no\n  ControlMaster no\n  ConnectTimeout 15\n  ServerAliveInterval 15\n  ServerAliveCountMax 3"' "$inv"
}

# build/<lab>/ssh/config, the kit machine's way in: the key the inventory names
# (targets.baremetal.ssh_key, else the lab's own build/<lab>/ssh/id_ed25519).
remote_ssh_config() {
  local lab=$1 dir
  dir=$(remote_dir "$lab")/ssh
  mkdir -p "$dir"
  chmod 700 "$dir"
  # Created private: the config names the key and the lab's inner addresses.
  : >"$dir/config"
  chmod 600 "$dir/config"
  ssh_config_text "$(remote_inv "$lab")" "$dir" "$dir/known_hosts" "$(remote_key_policy "$lab")" >>"$dir/config"
}

# "strict" when no host key of the lab may be learnt on first use, for any node: the
# target prints every node's keys on a console (target_console). Existing hosts whose
# keys the lab pins are checked strictly once remote_pin_listed_keys wrote them, before
# anything logs in to them.
remote_key_policy() {
  remote_use_target "$1"
  if declare -F target_console >/dev/null; then echo strict; fi
}

# Whether the lab file pins its existing hosts' keys.
remote_pins_keys() {
  jq -e '.targets.baremetal // {} | has("host_keys") or has("known_hosts_file")' "$(remote_dir "$1")/lab.json" >/dev/null 2>&1
}

# The host-key fingerprints the lab pins, "NODE FINGERPRINT" a line: those its file
# lists (targets.baremetal.host_keys) and those of the keys in the known_hosts file the
# site publishes (targets.baremetal.known_hosts_file: "NODE TYPE KEY" lines).
remote_pins() {
  local lab=$1 labjson file name type key
  labjson=$(remote_dir "$lab")/lab.json
  jq -r '.targets.baremetal.host_keys // {} | to_entries[] | .key as $n | .value[] | "\($n) \(.)"' "$labjson"
  file=$(jq -r '.targets.baremetal.known_hosts_file // empty' "$labjson")
  [[ -n $file ]] || return 0
  [[ $file == /* ]] || file=$PFSLAB_ROOT/$file
  [[ -r $file ]] || die "lab $lab: its known_hosts_file $file (targets.baremetal.known_hosts_file) does not exist or cannot be read"
  while read -r name type key _; do
    [[ -n $name && $name != \#* ]] || continue
    printf '%s %s\n' "$name" "$(ssh-keygen -lf - <<<"$type $key" | awk '{print $2}')"
  done <"$file"
}

# The nodes reached directly first (the login node), then those behind them: a jump
# host's key is checked before anything connects through it.
remote_nodes_jump_first() {
  jq -r '.nodes | map(select(.ssh_jump == null)) + map(select(.ssh_jump != null)) | .[].name' "$(remote_inv "$1")"
}

# Existing hosts with pinned fingerprints (targets.baremetal.host_keys): each host's
# keys, as it presents them (ssh-keyscan: no login, nothing sent but the key exchange;
# a host behind the login node is scanned from the login node, whose own key was
# checked first), are kept in known_hosts only when one has a pinned fingerprint.
# A host whose keys match none is refused before any connection logs in to it.
remote_pin_listed_keys() {
  local lab=$1 dir pins node jump addr scanned line fp kept want missing
  remote_pins_keys "$lab" || return 0
  pins=$(remote_pins "$lab")
  dir=$(remote_dir "$lab")/ssh
  missing=$(comm -23 <(remote_hosts "$lab" | sort) <(awk '{print $1}' <<<"$pins" | sort -u) | paste -sd' ' -)
  [[ -z $missing ]] || die "lab $lab pins the host keys of some hosts but not of $missing (targets.baremetal.host_keys, known_hosts_file): pin every host's key, or none"
  for node in $(remote_nodes_jump_first "$lab"); do
    grep -q "^$node " "$dir/known_hosts" 2>/dev/null && continue
    is_existing_host "$lab" "$node" || continue
    jump=$(remote_jump "$lab" "$node")
    addr=$(remote_addr "$lab" "$node")
    if [[ -n $jump ]]; then
      scanned=$(remote_ssh "$lab" "$jump" "ssh-keyscan -T 10 $(jq -r --arg n "$node" '.nodes[] | select(.name == $n) | .address' "$(remote_inv "$lab")") 2>/dev/null") || scanned=
    else
      scanned=$(ssh-keyscan -T 10 "$addr" 2>/dev/null) || scanned=
    fi
    if [[ -z $scanned ]]; then
      # Why it showed no key, in the words every other failure to reach a host uses: a
      # login attempt cannot get past the host-key check (strict, and no key is known),
      # so nothing is sent.
      scanned=$(remote_ssh "$lab" "$node" true 2>&1) || true
      die "$(remote_diagnose "$lab" "$node" "$scanned")"
    fi
    kept=""
    want=$(awk -v n="$node" '$1 == n {print $2}' <<<"$pins")
    while read -r line; do
      [[ -n $line && $line != \#* ]] || continue
      fp=$(ssh-keygen -lf - <<<"$line" 2>/dev/null | awk '{print $2}')
      if grep -qxF -- "$fp" <<<"$want"; then kept+="$node ${line#* }"$'\n'; fi
    done <<<"$scanned"
    if [[ -z $kept ]]; then
      die "host $node ($addr${jump:+, through $jump}) presents host keys $(while read -r line; do ssh-keygen -lf - <<<"$line" 2>/dev/null | awk '{printf "%s ", $2}'; done <<<"$scanned")that lab $lab does not pin (for $node: $(paste -sd' ' - <<<"$want")); nothing was sent to it. Another machine may be answering at its address; if the host was reinstalled, pin its new key (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on it, in targets.baremetal.host_keys or the known_hosts_file)"
    fi
    printf '%s' "$kept" >>"$dir/known_hosts"
    chmod 600 "$dir/known_hosts"
    log "host key of $node checked against the lab file's fingerprint: $(ssh-keygen -lf - <<<"${kept%%$'\n'*}" | awk '{print $2}')"
  done
  remote_ssh_config "$lab"
}

# The host keys a node's first boot printed on its console (cloud-init's "BEGIN SSH HOST
# KEY KEYS" block), from the target's API (target_console LAB NODE; aws, azure): written
# to known_hosts under the node's name before the kit's first connection, so that
# connection already checks the key. Targets without a console (existing hosts) fall back
# to trust on first use; the key then learned is printed for the user to compare.
remote_pin_host_keys() {
  local lab=$1 node=$2 dir keys
  dir=$(remote_dir "$lab")/ssh
  grep -q "^$node " "$dir/known_hosts" 2>/dev/null && return 0
  declare -F target_console >/dev/null || return 1
  keys=$(target_console "$lab" "$node" 2>/dev/null |
    sed -n '/-----BEGIN SSH HOST KEY KEYS-----/,/-----END SSH HOST KEY KEYS-----/{/-----/d; s/\r$//; p}' |
    awk -v n="$node" 'NF >= 2 && $1 ~ /^(ssh-|ecdsa-)/ {print n, $1, $2}') || true
  [[ -n $keys ]] || return 1
  printf '%s\n' "$keys" >>"$dir/known_hosts"
  chmod 600 "$dir/known_hosts"
  log "pinned the host keys node $node printed on its console ($(awk '{print $2}' <<<"$keys" | tr '\n' ' ' | sed 's/ $//'))"
  remote_ssh_config "$lab"
}

# A node's host key as learned on first use, for the log (a target without a console).
remote_tofu_note() {
  local lab=$1 node=$2 known line
  known=$(remote_dir "$lab")/ssh/known_hosts
  [[ -s $known ]] || return 0
  line=$(ssh-keygen -l -F "$node" -f "$known" 2>/dev/null | awk '!/^#/ {print $3 " (" $2 ")"; exit}') || true
  [[ -n $line ]] || return 0
  # Said once per node: a later lab-up checks the key strictly against this one.
  grep -qxF "$node $line" "$known.told" 2>/dev/null && return 0
  log "host key of $node trusted on first use (no console to pin it from): $line"
  echo "$node $line" >>"$known.told"
}

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

# Fail with that line unless NODE answers over SSH.
remote_reach() {
  local lab=$1 node=$2 out
  out=$(remote_ssh "$lab" "$node" true 2>&1) && return 0
  die "$(remote_diagnose "$lab" "$node" "$out")"
}

# Every node answers: the nodes reached directly first (the login node), so a login
# node that is down is named as such, not as every node behind it.
remote_reach_all() {
  local lab=$1 node key
  key=$(jq -r '.ssh.key // empty' "$(remote_inv "$lab")")
  [[ -z $key || -r $key ]] || die "lab $lab: its SSH key $key (targets.baremetal.ssh_key) does not exist or cannot be read"
  for node in $(remote_nodes_jump_first "$lab"); do
    remote_reach "$lab" "$node"
  done
  log "every node of lab $lab answers over SSH"
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

# The target's adapter (targets/<target>/adapter.sh) for its target_console, when
# scripts/lab has not sourced it already.
remote_use_target() {
  declare -F target_leftovers >/dev/null && return 0
  use_target "$(jq -r .target "$(remote_inv "$1")")"
}

# Nodes that are existing hosts (no cloud-init): their first boot is a script the kit runs.
remote_hosts() { jq -r '.baremetal.hosts // {} | keys[]' "$(remote_inv "$1")"; }

is_existing_host() { jq -e --arg n "$2" '.baremetal.hosts // {} | has($n)' "$(remote_inv "$1")" >/dev/null; }

# Wait until cloud-init finished on every node; fail naming the node whose first boot
# failed (with the last lines of its cloud-init output) or never finished.
remote_wait_boot() {
  local lab=$1 timeout=${PFSLAB_BOOT_TIMEOUT:-1200} start=$SECONDS node status
  for node in $(remote_nodes_jump_first "$lab"); do
    is_existing_host "$lab" "$node" && continue
    # The console shows the host keys once cloud-init's last stage ran: pin them before
    # the first connection (targets without a console trust on first use).
    until remote_pin_host_keys "$lab" "$node" || ! declare -F target_console >/dev/null; do
      ((SECONDS - start < timeout)) || die "node $node of lab $lab printed no SSH host keys on its console in ${timeout}s; see its console output"
      sleep 10
    done
    until remote_ssh "$lab" "$node" "test -e /var/lib/cloud/instance/boot-finished" >/dev/null 2>&1; do
      ((SECONDS - start < timeout)) || die "node $node of lab $lab did not finish its first boot in ${timeout}s (no /var/lib/cloud/instance/boot-finished)"
      sleep 10
    done
    declare -F target_console >/dev/null || remote_tofu_note "$lab" "$node"
    status=$(remote_ssh "$lab" "$node" "cloud-init status" 2>/dev/null || true)
    if [[ $status != *"status: done"* ]]; then
      remote_ssh "$lab" "$node" "tail -n 5 /var/log/cloud-init-output.log" 2>/dev/null | sed "s/^/[${PFSLAB_LOG_TAG:-remote}] $node: /" >&2 || true
      die "the first boot of node $node of lab $lab failed (${status:-no cloud-init status}); see /var/log/cloud-init-output.log on it"
    fi
  done
  log "every node of lab $lab finished its first boot"
}

# The lab whose first boot wrote a host's records (/etc/pfslab/node.json), empty for none.
remote_host_lab() {
  remote_ssh "$1" "$2" "cat /etc/pfslab/node.json 2>/dev/null || true" | jq -r '.lab // empty' 2>/dev/null || true
}

# Existing hosts get the first boot their user-data would have run, as a script over SSH.
# One lab at a time: /etc/pfslab and the roles' state are a host's, not a lab's, so a
# host that holds another lab's records is refused before any host is touched.
remote_boot_hosts() {
  local lab=$1 node script opts other
  [[ -n $(remote_hosts "$lab") ]] || return 0
  for node in $(remote_hosts "$lab"); do
    other=$(remote_host_lab "$lab" "$node")
    [[ -z $other || $other == "$lab" ]] ||
      die "host $node holds the records of lab $other (/etc/pfslab/node.json): existing hosts take one lab at a time; run 'make lab-down LAB=$other' first"
  done
  mapfile -t opts < <(remote_opts "$lab")
  for node in $(remote_hosts "$lab"); do
    script=$(remote_dir "$lab")/boot/$node.sh
    [[ -s $script ]] || die "no first-boot script for host $node ($script); run 'make lab-up LAB=$lab' again"
    log "first boot of existing host $node"
    ssh "${opts[@]}" "$(remote_target "$lab" "$node")" sh -s <"$script" >&2 ||
      remote_step_failed "$lab" "$node" $? "its first-boot script"
    remote_tofu_note "$lab" "$node"
  done
}

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

remote_preflight() {
  local lab=$1
  [[ -s $(remote_dir "$lab")/ssh/config ]] || remote_ssh_config "$lab"
  PFSLAB_BUILD="$REMOTE_BUILD" "$PFSLAB_ROOT/scripts/preflight" "$lab"
}

# The whole bring-up after apply.
remote_up() {
  local lab=$1
  [[ -s $(remote_inv "$lab") ]] || die "lab $lab has no inventory ($(remote_inv "$lab")); run 'make lab-up LAB=$lab'"
  require_cmd ssh scp jq ssh-keygen
  remote_use_target "$lab"
  [[ -z ${TARGET_CONSOLE_CMD:-} ]] || require_cmd "$TARGET_CONSOLE_CMD"
  remote_ssh_config "$lab"
  remote_pin_listed_keys "$lab"
  remote_wait_boot "$lab"
  [[ -z $(remote_hosts "$lab") ]] || remote_reach_all "$lab"
  remote_kit_sync "$lab"
  remote_boot_hosts "$lab"
  remote_copy_cluster "$lab"
  remote_phases "$lab" up
  # The login node first: preflight's MPI probe runs there, with the kit, the inner key
  # and the lab's inventory that login_setup puts there.
  login_setup "$lab"
  remote_preflight "$lab" || die "lab $lab failed its preflight (the FAIL lines above); fix them, then run 'make lab-up LAB=$lab' again"
}
