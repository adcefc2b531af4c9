# shellcheck shell=bash
# A local lab's nodes and roles, read from its inventory (build/<lab>/inventory.json):
# the role table in start order and running a role step inside a node's namespace.
# Used by scripts/lab (up, repair, down); health checks go through the package
# (pfslab/transport/local.py runs the same node-exec). Sourced after common.sh.

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
