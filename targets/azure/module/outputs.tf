output "ssh_addresses" {
  description = "Per node, the address the kit reaches over SSH: its public address, else its VNet address (through the login node, or from inside the VNet)."
  value       = { for name, m in var.machines : name => contains(var.public_nodes, name) ? azurerm_public_ip.node[name].ip_address : m.ethernet_address }
}

output "vm_ids" {
  description = "Per node, its VM resource id."
  value       = { for name, vm in azurerm_linux_virtual_machine.node : name => vm.id }
}

output "resource_group" {
  description = "The lab's resource group (deleting it deletes the lab)."
  value       = azurerm_resource_group.lab.name
}

output "proximity_placement_group" {
  description = "Id of the proximity placement group, or null."
  value       = var.proximity_placement ? azurerm_proximity_placement_group.lab[0].id : null
}
