output "lab" {
  description = "The lab file as read (validated beforehand by `.venv/bin/pfslab lab check`)."
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

output "public_nodes" {
  description = "The nodes that get a public address (targets.<cloud>.public_ip: login, all or none; pfslab/layout.py decides)."
  value       = tolist(local.layout.public_nodes)
}

output "inventory" {
  description = "What ReFrame and the kit's scripts know of a running lab (no secrets)."
  value       = local.inventory
}

output "machines" {
  description = "Per node, what the target provisions: kind (aws_instance, azure_vm, maas, host, netns), type (instance type or VM size), image (server or client), efa_interfaces, local_nvme and nvme_model, data_devices, root_volume_gb, infiniband, accelerated, maas_tags, distro_series, ipoib_address, ethernet_address."
  value       = local.machines
}

output "tags" {
  description = "Tags every cloud resource of the lab carries: lab, owner, expiry (RFC 3339), pfslab."
  value       = local.tags
}

output "boot_steps" {
  description = "Per node, the role steps its first boot runs, in order, as [family, action, component]: common tuning, then the node-local steps of its roles in phase order."
  value       = local.boot_steps
}

output "user_data" {
  description = "Per node, its cloud-init user-data (#cloud-config): the node config and inventory under /etc/pfslab, the lab's hosts, data-drive links, and the boot steps. Holds no secret."
  value       = local.user_data
}

output "problems" {
  description = "Why this lab cannot be provisioned on its target (unmapped node groups, EFA or NVMe counts that disagree with the lab file, missing hosts, oversized user-data); empty when it can. The roots refuse to plan with any."
  value       = local.problems
}

output "boot_scripts" {
  description = "Per node, its first boot as a POSIX shell script (the files, drive links and steps of its user-data), for existing hosts no provider boots."
  value       = local.boot_scripts
}
