output "ssh_addresses" {
  description = "Per node, the address the kit reaches over SSH (the plan's, set statically by MAAS)."
  value       = { for name, n in var.nodes : name => n.address }
}

output "machine_ids" {
  description = "Per node, the MAAS system id of the machine it runs on."
  value       = { for name, i in maas_instance.node : name => i.id }
}
