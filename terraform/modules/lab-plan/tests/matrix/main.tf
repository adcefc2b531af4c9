# Test helper: the lab plan of every shipped lab for every target it maps (its own
# `target` and each key of its `targets`), so `terraform test` covers new labs
# without anyone adding a run block. Labs that `extends` another are read resolved
# by the kit (build/<lab>/lab.json); raw, they are partial, so they are listed as
# skipped here and covered by tests/unit/test_user_data.py, which renders resolved labs.

variable "labs_dir" {
  description = "Directory of the lab files (labs/)."
  type        = string

  validation {
    condition     = length(fileset(var.labs_dir, "*.yaml")) > 0
    error_message = "The labs_dir holds no lab files."
  }
}

locals {
  raw     = { for f in fileset(var.labs_dir, "*.yaml") : trimsuffix(f, ".yaml") => yamldecode(file("${var.labs_dir}/${f}")) }
  skipped = sort([for name, lab in local.raw : name if contains(keys(lab), "extends")])
  pairs = merge([
    for name, lab in local.raw : {
      for t in distinct(concat([lab.target], keys(try(lab.targets, {})))) : "${name}/${t}" => { file = "${var.labs_dir}/${name}.yaml", target = t, mapped = t == "local" || contains(keys(try(lab.targets, {})), t) }
    } if !contains(keys(lab), "extends")
  ]...)
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

output "skipped" {
  description = "Labs that extend another (planned from their resolved form elsewhere)."
  value       = local.skipped
}

output "plans" {
  description = "Per lab/target, what the tests check."
  value = {
    for k, m in module.plan : k => {
      target     = m.target
      mapped     = local.pairs[k].mapped
      problems   = m.problems
      nodes      = length(m.nodes)
      addresses  = [for n in m.inventory.nodes : n.address]
      user_data  = m.user_data
      boot_steps = m.boot_steps
      machines   = m.machines
      tags       = m.tags
      configs    = { for name, c in m.node_configs : name => jsondecode(c) }
      inventory  = m.inventory
    }
  }
}
