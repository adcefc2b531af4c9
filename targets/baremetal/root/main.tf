# Root for the baremetal target with existing hosts only (targets.baremetal.hosts):
# it needs no provider. Each host is recorded in the state (terraform_data) with the
# digest of its first-boot script, and the inventory is written like every other
# target's. The kit then runs each host's boot script and the cross-node steps over
# SSH (scripts/remote-up). Labs with MAAS machines use targets/baremetal/root/maas.

module "plan" {
  source         = "../../../terraform/modules/lab-plan"
  lab_file       = var.lab_file
  target         = "baremetal"
  ssh_public_key = fileexists(var.ssh_public_key_file) ? trimspace(file(var.ssh_public_key_file)) : null
  owner          = var.owner
  expiry         = var.expiry
  deployment     = var.deployment
}

locals {
  baremetal = module.plan.lab.targets.baremetal
  maas      = [for name, m in module.plan.machines : name if m.kind != "host"]
  # Hosts behind a login node: the kit reaches the login node at login_address and the
  # others through it (the plan's ssh_jump); a key of the user's (ssh_key) or the lab's own.
  login_address = lookup(local.baremetal, "login_address", null)
  ssh_key       = lookup(local.baremetal, "ssh_key", null) == null ? "${var.state_root}/ssh/id_ed25519" : (startswith(local.baremetal.ssh_key, "/") ? local.baremetal.ssh_key : "${var.kit_root}/${local.baremetal.ssh_key}")
}

# A host of the lab: replaced (its boot script run again by the kit) when its
# address or its first boot changes.
resource "terraform_data" "host" {
  for_each = module.plan.nodes
  input = {
    node    = each.key
    address = each.value.address
    boot    = sha256(module.plan.boot_scripts[each.key])
    tags    = module.plan.tags
  }

  lifecycle {
    precondition {
      condition     = length(local.maas) == 0
      error_message = "Nodes ${join(", ", local.maas)} are not in targets.baremetal.hosts: MAAS machines are provisioned by targets/baremetal/root/maas."
    }
  }
}

output "inventory" {
  description = "The running lab, for ReFrame and the kit's scripts (written to build/<lab>/inventory.json): the local lab's shape plus SSH addresses."
  value = merge(module.plan.inventory, {
    nodes        = [for n in module.plan.inventory.nodes : merge(n, { ssh_address = n.name == module.plan.inventory.login && local.login_address != null ? local.login_address : n.address })]
    ssh          = { user = local.baremetal.ssh_user, key = local.ssh_key, known_hosts = "${var.state_root}/ssh/known_hosts" }
    cluster_path = module.plan.nodes[module.plan.inventory.nodes[0].name].paths.cluster
    phases       = [for p in module.plan.phases : values(p)]
    baremetal = {
      hosts = { for name, h in terraform_data.host : name => h.input.address }
      maas  = {}
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
  value       = module.plan.boot_scripts
}
