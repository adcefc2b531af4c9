# Provider-free root that renders a lab's plan for one target without provisioning
# anything: `scripts/render-user-data LAB TARGET OUTDIR` applies it (locals and
# outputs only, no resources) and writes each node's cloud-init user-data to files
# that `cloud-init schema` checks.

module "plan" {
  source         = "../../modules/lab-plan"
  lab_file       = var.lab_file
  target         = var.target
  ssh_public_key = var.ssh_public_key
  owner          = var.owner
  expiry         = var.expiry
  deployment     = var.deployment
}

output "user_data" {
  description = "Per node, its cloud-init user-data."
  value       = module.plan.user_data
}

output "boot_steps" {
  description = "Per node, the role steps its first boot runs."
  value       = module.plan.boot_steps
}

output "machines" {
  description = "Per node, what the target would provision."
  value       = module.plan.machines
}

output "tags" {
  description = "Tags of the lab's cloud resources."
  value       = module.plan.tags
}

output "inventory" {
  description = "The lab plan's inventory (without the addresses a target learns at apply)."
  value       = module.plan.inventory
}

output "boot_scripts" {
  description = "Per node, its first boot as a shell script (existing hosts)."
  value       = module.plan.boot_scripts
}

output "problems" {
  description = "Why the lab cannot be provisioned on this target; empty when it can."
  value       = module.plan.problems
}
