# Root for the azure target: `make lab-up LAB=<lab>` with a lab whose target is azure.
# The lab plan decides everything; the azure adapter creates it. Cross-node steps
# run afterwards over SSH (scripts/remote-up).

module "plan" {
  source         = "../../../terraform/modules/lab-plan"
  lab_file       = var.lab_file
  target         = "azure"
  ssh_public_key = trimspace(file(var.ssh_public_key_file))
  owner          = var.owner
  expiry         = var.expiry
  deployment     = var.deployment
}

locals {
  azure = module.plan.lab.targets.azure
}

module "lab" {
  source   = "../module"
  lab_name = module.plan.lab.name
  location = local.azure.location
  # The lab file's, else one per lab and owner (instance.cloud_name): two owners' labs of
  # one name in one subscription do not collide. A lab brought up before it existed
  # keeps its name until it is down.
  resource_group      = try(local.azure.resource_group, module.plan.lab.instance.cloud_name, replace("pfslab-${module.plan.lab.name}", "+", "-"))
  vnet_subnet         = try(local.azure.vnet_subnet, module.plan.lab.network.subnet)
  proximity_placement = local.azure.proximity_placement
  public_nodes        = module.plan.public_nodes
  encryption_at_host  = local.azure.encryption_at_host
  ssh_cidrs           = local.azure.ssh_cidrs
  ssh_public_key      = trimspace(file(var.ssh_public_key_file))
  images              = local.azure.images
  nodes               = { for name, n in module.plan.nodes : name => { address = n.address, roles = n.roles } }
  machines            = module.plan.machines
  user_data           = module.plan.user_data
  tags                = module.plan.tags
}

output "inventory" {
  description = "The running lab, for ReFrame and the kit's scripts (written to build/<lab>/inventory.json): the local lab's shape plus SSH addresses and the Azure resources."
  value = merge(module.plan.inventory, {
    nodes        = [for n in module.plan.inventory.nodes : merge(n, { ssh_address = module.lab.ssh_addresses[n.name] })]
    ssh          = { user = local.azure.ssh_user, key = "${var.state_root}/ssh/id_ed25519", known_hosts = "${var.state_root}/ssh/known_hosts" }
    cluster_path = module.plan.nodes[module.plan.inventory.nodes[0].name].paths.cluster
    phases       = [for p in module.plan.phases : values(p)]
    azure = {
      location                  = local.azure.location
      resource_group            = module.lab.resource_group
      vm_ids                    = module.lab.vm_ids
      proximity_placement_group = module.lab.proximity_placement_group
      tags                      = module.plan.tags
    }
  })

  precondition {
    condition     = length(module.plan.problems) == 0
    error_message = "Lab ${module.plan.lab.name} cannot be provisioned on azure: ${join("; ", module.plan.problems)}."
  }
}
