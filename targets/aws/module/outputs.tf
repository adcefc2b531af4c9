output "ssh_addresses" {
  description = "Per node, the address the kit reaches over SSH: its Elastic IP, else its private address (through the login node, or from inside the VPC)."
  value       = { for name, n in var.nodes : name => contains(var.public_nodes, name) ? aws_eip.node[name].public_ip : n.address }
}

output "instance_ids" {
  description = "Per node, its EC2 instance id."
  value       = { for name, i in aws_instance.node : name => i.id }
}

output "efa_interfaces" {
  description = "Per node, the ids of its EFA interfaces in network-card order (empty for ENA-only types)."
  value = {
    for name, m in var.machines : name => concat(
      m.efa_interfaces > 0 ? [aws_network_interface.primary[name].id] : [],
      [for k, v in local.extra_efa : aws_network_interface.efa[k].id if v.node == name],
    )
  }
}

output "security_group_id" {
  description = "The lab's security group (members admit each other)."
  value       = aws_security_group.lab.id
}

output "placement_group" {
  description = "Name of the cluster placement group, or null."
  value       = var.placement == "cluster" ? aws_placement_group.lab[0].name : null
}

output "subnet_id" {
  description = "The subnet the nodes are in."
  value       = local.subnet_id
}
