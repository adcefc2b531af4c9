output "lab" {
  description = "The lab file as read (validated beforehand by `scripts/pfslab lab check`)."
  value       = local.lab
}

output "target" {
  description = "The target the plan is for."
  value       = local.target
}

output "nodes" {
  description = "Every node: name, group, index, roles, address, OSD ids and paths."
  value       = local.nodes
}

output "node_configs" {
  description = "Per node, the JSON document its roles read from $PFSLAB_NODE_CONFIG."
  value       = { for name, c in local.node_configs : name => jsonencode(c) }
}

output "phases" {
  description = "Start order: a list of maps \"node/role\" => {node, role}; stop in reverse."
  value       = local.phases
}

output "clients" {
  description = "Names of the nodes that mount the file system and run benchmark threads."
  value       = local.clients
}

output "inventory" {
  description = "What ReFrame and the kit's scripts know of a running lab (no secrets)."
  value       = local.inventory
}
