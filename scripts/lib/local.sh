# shellcheck shell=bash
# A local lab's nodes and roles, read from its inventory (build/<lab>/inventory.json):
# the role table in start order and running a role step inside a node's namespace.
# Shared by scripts/lab (up, down, status) and scripts/watchdog. Sourced after
# common.sh; defines functions only.

# Each role's start phase, from the family files (registry/families/*.json).
role_phases() { jq -s 'map(.roles[] | {(.name): .phase}) | add' "$PFSLAB_ROOT"/registry/families/*.json; }

# "node role netns config" for every role of the lab, in start order (phase order).
role_table() {
  local inv=$1
  jq -r --argjson phase "$(role_phases)" '
    .local as $l
    | [.nodes[] as $n | $n.roles[] | {node: $n.name, role: .}]
    | sort_by($phase[.role] // 99)
    | .[] | "\(.node) \(.role) \($l.netns[.node]) \($l.state_root)/nodes/\(.node)/node.json"' "$inv"
}

role_script() { echo "$PFSLAB_ROOT/scripts/roles/${1%%-*}"; }

node_exec() { "$PFSLAB_ROOT/scripts/local/node-exec" "$@"; }

# Run a role action with a time bound: a sick file system must not hang the caller.
# Usage: role_call SECONDS NETNS CONFIG ROLE ACTION [COMPONENT]   (default: ROLE's)
role_call() {
  local seconds=$1 netns=$2 config=$3 role=$4 action=$5 component=${6:-${4#*-}}
  bounded "$seconds" "$PFSLAB_ROOT/scripts/local/node-exec" "$netns" "$config" \
    "$(role_script "$role")" "$action" "$component"
}
