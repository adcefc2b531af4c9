# shellcheck shell=bash
# The cross-node steps of a cloud or bare-metal lab, run from the kit's machine over
# SSH after `terraform apply` (never through Terraform state or outputs):
#   wait for every node's first boot (cloud-init), or run it on existing hosts;
#   copy the cluster's files (paths.cluster: keys, ceph.conf, monmap, BeeGFS's
#   connAuthFile) from the bootstrap node to the nodes whose roles use them, through
#   this machine, never printed;
#   start the roles phase by phase (the lab plan's `phases`), then scripts/preflight.
# Everything comes from build/<lab>/inventory.json and the lab's key under
# build/<lab>/ssh/. Sourced after common.sh; defines functions only.
#
# Environment: PFSLAB_BUILD (default <kit>/build), PFSLAB_REMOTE_ROOT (the kit on the
# nodes, default /opt/pfslab), PFSLAB_BOOT_TIMEOUT (seconds, default 1200).

# shellcheck source=scripts/lib/cluster-files.sh
source "$PFSLAB_ROOT/scripts/lib/cluster-files.sh"

REMOTE_BUILD=${PFSLAB_BUILD:-$PFSLAB_ROOT/build}
REMOTE_ROOT=${PFSLAB_REMOTE_ROOT:-/opt/pfslab}
REMOTE_CONFIG=/etc/pfslab/node.json

remote_dir() { echo "$REMOTE_BUILD/$1"; }
remote_inv() { echo "$REMOTE_BUILD/$1/inventory.json"; }

# Options of every ssh and scp to a lab's node: the lab's own key and known_hosts.
remote_opts() {
  local dir
  dir=$(remote_dir "$1")
  printf '%s\n' -o BatchMode=yes -o StrictHostKeyChecking=accept-new \
    -o "UserKnownHostsFile=$dir/ssh/known_hosts" -o ConnectTimeout=15 -i "$dir/ssh/id_ed25519"
}

# user@address the kit reaches a node at.
remote_target() {
  local lab=$1 node=$2
  jq -r --arg n "$node" '(.ssh.user // "root") as $u | .nodes[] | select(.name == $n) | "\($u)@\(.ssh_address // .address)"' \
    "$(remote_inv "$lab")"
}

# remote_ssh LAB NODE COMMAND: run a command on a node (stdin closed).
remote_ssh() {
  local lab=$1 node=$2
  shift 2
  local opts
  mapfile -t opts < <(remote_opts "$lab")
  ssh -n "${opts[@]}" "$(remote_target "$lab" "$node")" "$@"
}

# A role step on a node, with its node config: remote_role LAB NODE FAMILY ACTION COMPONENT
remote_role() {
  local lab=$1 node=$2 family=$3 action=$4 component=$5
  remote_ssh "$lab" "$node" "PFSLAB_NODE_CONFIG=$REMOTE_CONFIG $REMOTE_ROOT/scripts/roles/$family $action $component"
}

remote_nodes() { jq -r '.nodes[].name' "$(remote_inv "$1")"; }

# Nodes that are existing hosts (no cloud-init): their first boot is a script the kit runs.
remote_hosts() { jq -r '.baremetal.hosts // {} | keys[]' "$(remote_inv "$1")"; }

is_existing_host() { jq -e --arg n "$2" '.baremetal.hosts // {} | has($n)' "$(remote_inv "$1")" >/dev/null; }

# Wait until cloud-init finished on every node; fail naming the node whose first boot
# failed (with the last lines of its cloud-init output) or never finished.
remote_wait_boot() {
  local lab=$1 timeout=${PFSLAB_BOOT_TIMEOUT:-1200} start=$SECONDS node status
  for node in $(remote_nodes "$lab"); do
    is_existing_host "$lab" "$node" && continue
    until remote_ssh "$lab" "$node" "test -e /var/lib/cloud/instance/boot-finished" >/dev/null 2>&1; do
      ((SECONDS - start < timeout)) || die "node $node of lab $lab did not finish its first boot in ${timeout}s (no /var/lib/cloud/instance/boot-finished)"
      sleep 10
    done
    status=$(remote_ssh "$lab" "$node" "cloud-init status" 2>/dev/null || true)
    if [[ $status != *"status: done"* ]]; then
      remote_ssh "$lab" "$node" "tail -n 5 /var/log/cloud-init-output.log" 2>/dev/null | sed "s/^/[${PFSLAB_LOG_TAG:-remote}] $node: /" >&2 || true
      die "the first boot of node $node of lab $lab failed (${status:-no cloud-init status}); see /var/log/cloud-init-output.log on it"
    fi
  done
  log "every node of lab $lab finished its first boot"
}

# Existing hosts get the first boot their user-data would have run, as a script over SSH.
remote_boot_hosts() {
  local lab=$1 node script opts
  mapfile -t opts < <(remote_opts "$lab")
  for node in $(remote_hosts "$lab"); do
    script=$(remote_dir "$lab")/boot/$node.sh
    [[ -s $script ]] || die "no first-boot script for host $node ($script); run 'make lab-up LAB=$lab' again"
    log "first boot of existing host $node"
    ssh "${opts[@]}" "$(remote_target "$lab" "$node")" sh -s <"$script" >&2 ||
      die "the first-boot script failed on host $node of lab $lab (output above)"
  done
}

# Copy the cluster's files from the bootstrap node (the first node of the first phase)
# to every other node, host to host through this machine (scp -3): secrets never touch
# this machine's disk and are never printed. Each node gets only what its roles use
# (cluster_files_for, scripts/lib/cluster-files.sh: no mon. or admin key on a client),
# into a directory of mode 700, modes kept. Nothing to do when the bootstrap node made
# no cluster files (NFS, GPFS).
remote_copy_cluster() {
  local lab=$1 inv boot path node opts have file files srcs roles
  inv=$(remote_inv "$lab")
  boot=$(jq -r '.phases[0][0].node // empty' "$inv")
  path=$(jq -r '.cluster_path // "/etc/pfslab/cluster"' "$inv")
  [[ -n $boot ]] || return 0
  # Only the names: which files there are is no secret.
  have=$(remote_ssh "$lab" "$boot" "ls -A '$path' 2>/dev/null" 2>/dev/null) || have=
  if [[ -z $have ]]; then
    log "the bootstrap node $boot has no cluster files in $path; nothing to distribute"
    return 0
  fi
  mapfile -t opts < <(remote_opts "$lab")
  for node in $(remote_nodes "$lab"); do
    [[ $node == "$boot" ]] && continue
    mapfile -t roles < <(jq -r --arg n "$node" '.nodes[] | select(.name == $n) | .roles[]' "$inv")
    files=()
    while read -r file; do
      [[ -n $file ]] && grep -qxF -- "$file" <<<"$have" && files+=("$file")
    done < <(cluster_files_for "${roles[@]}")
    ((${#files[@]})) || continue
    srcs=()
    for file in "${files[@]}"; do srcs+=("$(remote_target "$lab" "$boot"):$path/$file"); done
    remote_ssh "$lab" "$node" "mkdir -p '$path' && chmod 700 '$path'" ||
      die "cannot create $path on node $node of lab $lab"
    scp -3 -q -p "${opts[@]}" "${srcs[@]}" "$(remote_target "$lab" "$node"):$path/" ||
      die "copying the cluster files from $boot to $node failed"
    log "copied to $node what its roles use: ${files[*]}"
  done
}

# Start the roles phase by phase: every "node/role" of a phase runs `up`, in order.
remote_start_phases() {
  local lab=$1 inv count i node role
  inv=$(remote_inv "$lab")
  count=$(jq '.phases | length' "$inv")
  for ((i = 0; i < count; i++)); do
    while read -r node role; do
      [[ -n $node ]] || continue
      log "phase $i: $role up on $node"
      remote_role "$lab" "$node" "${role%%-*}" up "${role#*-}" >&2 ||
        die "$role failed to start on $node of lab $lab (phase $i); its output is above"
    done < <(jq -r --argjson i "$i" '.phases[$i][] | "\(.node) \(.role)"' "$inv")
  done
}

# Stop the roles in reverse phase order (existing hosts outlive the lab).
remote_stop_phases() {
  local lab=$1 inv count i node role
  inv=$(remote_inv "$lab")
  count=$(jq '.phases | length' "$inv")
  for ((i = count - 1; i >= 0; i--)); do
    while read -r node role; do
      [[ -n $node ]] || continue
      remote_role "$lab" "$node" "${role%%-*}" stop "${role#*-}" >&2 || log "could not stop $role on $node (ignored)"
    done < <(jq -r --argjson i "$i" '.phases[$i][] | "\(.node) \(.role)"' "$inv")
  done
}

# scripts/preflight reaches nodes by their lab address with plain ssh: give it an ssh
# that maps each address to the node's SSH address, user, key and known_hosts.
remote_ssh_config() {
  local lab=$1 dir real
  dir=$(remote_dir "$lab")
  real=$(command -v ssh) || die "missing command 'ssh'"
  mkdir -p "$dir/ssh/bin"
  jq -r --arg d "$dir/ssh" '(.ssh.user // "root") as $u | .nodes[] |
    "Host \(.address)\n  HostName \(.ssh_address // .address)\n  User \($u)\n  IdentityFile \($d)/id_ed25519\n  IdentitiesOnly yes\n  UserKnownHostsFile \($d)/known_hosts\n  StrictHostKeyChecking accept-new\n"' \
    "$(remote_inv "$lab")" >"$dir/ssh/config"
  printf '#!/bin/sh\n# Written by scripts/lib/remote.sh: ssh to lab %s by lab address.\nexec %s -F %s "$@"\n' \
    "$lab" "$real" "$dir/ssh/config" >"$dir/ssh/bin/ssh"
  chmod 700 "$dir/ssh/bin/ssh"
  chmod 600 "$dir/ssh/config"
}

remote_preflight() {
  local lab=$1
  remote_ssh_config "$lab"
  PATH="$(remote_dir "$lab")/ssh/bin:$PATH" PFSLAB_BUILD="$REMOTE_BUILD" "$PFSLAB_ROOT/scripts/preflight" "$lab"
}

# The whole bring-up after apply.
remote_up() {
  local lab=$1
  [[ -s $(remote_inv "$lab") ]] || die "lab $lab has no inventory ($(remote_inv "$lab")); run 'make lab-up LAB=$lab'"
  require_cmd ssh scp jq
  remote_wait_boot "$lab"
  remote_boot_hosts "$lab"
  remote_copy_cluster "$lab"
  remote_start_phases "$lab"
  remote_preflight "$lab"
}
