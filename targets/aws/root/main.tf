# Root for the aws target: `make lab-up LAB=<lab>` with a lab whose target is aws.
# The lab plan decides everything (instance types, EFA and NVMe counts, addresses,
# tags, user-data); the aws adapter creates it. Cross-node steps (keys, starting
# roles in phase order, health) run afterwards over SSH (scripts/remote-up).

module "plan" {
  source         = "../../../terraform/modules/lab-plan"
  lab_file       = var.lab_file
  target         = "aws"
  ssh_public_key = trimspace(file(var.ssh_public_key_file))
  owner          = var.owner
  expiry         = var.expiry
  deployment     = var.deployment
}

locals {
  aws = module.plan.lab.targets.aws
}

module "lab" {
  source   = "../module"
  lab_name = module.plan.lab.name
  # A lab brought up before instance.cloud_name existed keeps its names until it is down.
  resource_name     = try(module.plan.lab.instance.cloud_name, "pfslab-${module.plan.lab.name}")
  subnet_cidr       = module.plan.lab.network.subnet
  availability_zone = local.aws.availability_zone
  vpc_id            = try(local.aws.vpc_id, null)
  subnet_id         = try(local.aws.subnet_id, null)
  placement         = local.aws.placement
  public_nodes      = module.plan.public_nodes
  ssh_cidrs         = local.aws.ssh_cidrs
  ssh_public_key    = trimspace(file(var.ssh_public_key_file))
  images            = local.aws.images
  nodes             = { for name, n in module.plan.nodes : name => { address = n.address, roles = n.roles } }
  machines          = module.plan.machines
  user_data         = module.plan.user_data
  tags              = module.plan.tags
}

output "inventory" {
  description = "The running lab, for ReFrame and the kit's scripts (written to build/<lab>/inventory.json): the local lab's shape plus SSH addresses and the AWS resources."
  value = merge(module.plan.inventory, {
    nodes        = [for n in module.plan.inventory.nodes : merge(n, { ssh_address = module.lab.ssh_addresses[n.name] })]
    ssh          = { user = local.aws.ssh_user, key = "${var.state_root}/ssh/id_ed25519", known_hosts = "${var.state_root}/ssh/known_hosts" }
    cluster_path = module.plan.nodes[module.plan.inventory.nodes[0].name].paths.cluster
    phases       = [for p in module.plan.phases : values(p)]
    aws = {
      region          = local.aws.region
      instance_ids    = module.lab.instance_ids
      efa_interfaces  = module.lab.efa_interfaces
      security_group  = module.lab.security_group_id
      placement_group = module.lab.placement_group
      subnet_id       = module.lab.subnet_id
      tags            = module.plan.tags
    }
  })

  precondition {
    condition     = length(module.plan.problems) == 0
    error_message = "Lab ${module.plan.lab.name} cannot be provisioned on aws: ${join("; ", module.plan.problems)}."
  }
}
