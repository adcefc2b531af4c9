# shellcheck shell=bash
# A local lab's nodes and roles, read from its inventory (build/<lab>/inventory.json):
# the role table in start order and running a role step inside a node's namespace.
# Shared by scripts/lab (up, down, status) and scripts/watchdog. Sourced after
# common.sh; defines functions only.

# "node role netns config" for every role of the lab, in start order: the phases the
# kit derived (pfslab/layout.py), as the lab plan handed them to the inventory. (An
# inventory written before it had phases gives its roles in node order.)
role_table() {
  jq -r '.local as $l
    | (.phases // [[.nodes[] as $n | $n.roles[] | {node: $n.name, role: .}]])[][]
    | "\(.node) \(.role) \($l.netns[.node]) \($l.state_root)/nodes/\(.node)/node.json"' "$1"
}

# A role's script here: its family's (families/<fs>/role, the family named by the
# role's prefix), else the kit's own (scripts/roles/common, scripts/roles/slurm).
role_script() {
  local dir
  dir=$(family_dir "${1%%-*}")
  if [[ -n $dir ]]; then echo "$dir/role"; else echo "$PFSLAB_ROOT/scripts/roles/${1%%-*}"; fi
}

node_exec() { "$PFSLAB_ROOT/scripts/local/node-exec" "$@"; }

# Run a role action with a time bound: a sick file system must not hang the caller.
# Usage: role_call SECONDS NETNS CONFIG ROLE ACTION [COMPONENT]   (default: ROLE's)
role_call() {
  local seconds=$1 netns=$2 config=$3 role=$4 action=$5 component=${6:-${4#*-}}
  bounded "$seconds" "$PFSLAB_ROOT/scripts/local/node-exec" "$netns" "$config" \
    "$(role_script "$role")" "$action" "$component"
}
