# shellcheck shell=bash
# A local lab's nodes and roles, read from its inventory (build/<lab>/inventory.json):
# the role table in start order and running a role step inside a node's namespace.
# Shared by scripts/lab (up, down, status) and scripts/watchdog. Sourced after
# common.sh; defines functions only.

# "node role netns config" for every role of the lab, in start order.
role_table() {
  local inv=$1
  jq -r '
    .local as $l
    | (["mon","mgr","osd","mds","client","mgmt","meta","storage","server","nsd","manager"]) as $order
    | [.nodes[] as $n | $n.roles[] | {node: $n.name, role: .}]
    | sort_by(. as $r | ($order | index($r.role | split("-")[1:] | join("-"))) // 99)
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
