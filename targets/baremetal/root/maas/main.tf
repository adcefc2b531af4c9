# Root for the baremetal target with MAAS machines (targets.baremetal.maas), and
# any existing hosts beside them (targets.baremetal.hosts). MAAS deploys each
# machine with the lab plan's cloud-init user-data; existing hosts get the same
# first boot as a script over SSH from the kit (scripts/remote-up).

module "plan" {
  source         = "../../../../terraform/modules/lab-plan"
  lab_file       = var.lab_file
  target         = "baremetal"
  ssh_public_key = trimspace(file(var.ssh_public_key_file))
  owner          = var.owner
  expiry         = var.expiry
  deployment     = var.deployment
}

locals {
  baremetal  = module.plan.lab.targets.baremetal
  maas_nodes = { for name, n in module.plan.nodes : name => { address = n.address, roles = n.roles } if module.plan.machines[name].kind == "maas" }
  hosts      = { for name, n in module.plan.nodes : name => n.address if module.plan.machines[name].kind == "host" }
}

module "lab" {
  source      = "../../module"
  nodes       = local.maas_nodes
  machines    = { for name, n in local.maas_nodes : name => { maas_tags = module.plan.machines[name].maas_tags, distro_series = module.plan.machines[name].distro_series } }
  subnet_cidr = module.plan.lab.network.subnet
  interface   = local.baremetal.maas.interface
  zone        = try(local.baremetal.maas.zone, null)
  pool        = try(local.baremetal.maas.pool, null)
  user_data   = { for name, n in local.maas_nodes : name => module.plan.user_data[name] }
}

resource "terraform_data" "host" {
  for_each = local.hosts
  input = {
    node    = each.key
    address = each.value
    boot    = sha256(module.plan.boot_scripts[each.key])
  }
}

output "inventory" {
  description = "The running lab, for ReFrame and the kit's scripts (written to build/<lab>/inventory.json): the local lab's shape plus SSH addresses and the MAAS machines."
  value = merge(module.plan.inventory, {
    nodes        = [for n in module.plan.inventory.nodes : merge(n, { ssh_address = lookup(local.hosts, n.name, lookup(module.lab.ssh_addresses, n.name, n.address)) })]
    ssh          = { user = local.baremetal.ssh_user, key = "${var.state_root}/ssh/id_ed25519", known_hosts = "${var.state_root}/ssh/known_hosts" }
    cluster_path = module.plan.nodes[module.plan.inventory.nodes[0].name].paths.cluster
    phases       = [for p in module.plan.phases : values(p)]
    baremetal = {
      hosts = local.hosts
      maas  = module.lab.machine_ids
      tags  = module.plan.tags
    }
  })

  precondition {
    condition     = length(module.plan.problems) == 0
    error_message = "Lab ${module.plan.lab.name} cannot be provisioned on baremetal: ${join("; ", module.plan.problems)}."
  }
}

output "boot_scripts" {
  description = "Per existing host, the first-boot script the kit runs on it over SSH (no secrets)."
  value       = { for name, a in local.hosts : name => module.plan.boot_scripts[name] }
}
