# Test helper: the lab plan of every shipped lab for every target it is meant for (its
# own `target` and each key of its `targets`), so `terraform test` covers new labs
# without anyone adding a run block. It plans the labs as the kit resolves them
# (`pfslab lab export`, run by scripts/check-terraform): `extends` applied, defaults
# filled in, the layout derived.

variable "resolved_dir" {
  description = "Directory written by `pfslab lab export`: <lab>@<target>.json and pairs.json."
  type        = string

  validation {
    condition     = fileexists("${var.resolved_dir}/pairs.json")
    error_message = "The resolved_dir has no pairs.json: run scripts/check-terraform (it runs `pfslab lab export`)."
  }
}

locals {
  pairs = {
    for key, p in jsondecode(file("${var.resolved_dir}/pairs.json")) : key => merge(p, { file = "${var.resolved_dir}/${p.file}" }) if p.planned
  }
}

module "plan" {
  source         = "../.."
  for_each       = local.pairs
  lab_file       = each.value.file
  target         = each.value.target
  ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPfslabTestKeyOnlyForTerraformTest pfslab-test"
  expiry         = "2026-01-01T08:00:00Z"
}

output "pairs" {
  description = "Every lab/target planned."
  value       = sort(keys(local.pairs))
}

output "plans" {
  description = "Per lab/target, what the tests check."
  value = {
    for k, m in module.plan : k => {
      target = m.target
      # Existing hosts behind a login node (targets.baremetal.login_address).
      behind_login = try(m.lab.targets[m.target].login_address, null) != null
      mapped       = local.pairs[k].mapped
      problems     = m.problems
      nodes        = length(m.nodes)
      addresses    = [for n in m.inventory.nodes : n.address]
      user_data    = m.user_data
      boot_steps   = m.boot_steps
      machines     = m.machines
      tags         = m.tags
      configs      = { for name, c in m.node_configs : name => jsondecode(c) }
      inventory    = m.inventory
      public       = m.public_nodes
      subnet       = m.lab.network.subnet
    }
  }
}
