# What the cloud adapters (modules/aws, modules/azure) take alike from the lab plan.
# Linked into each of them as cloud-variables.tf, so the contract is written once.

variable "lab_name" {
  description = "Name of the lab (its tags and descriptions; what must be unique in an account is named after the resolved lab's instance.cloud_name)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9.+-]{0,39}$", var.lab_name))
    error_message = "The lab_name must be lower case letters, digits, '.', '+' or '-'."
  }
}

variable "nodes" {
  description = "Nodes from the lab plan: name => {address, roles}."
  type = map(object({
    address = string
    roles   = list(string)
  }))

  validation {
    condition     = length(var.nodes) > 0
    error_message = "The lab has no nodes."
  }
}

variable "ssh_cidrs" {
  description = "Networks admitted to port 22 (the kit's machine or a bastion)."
  type        = list(string)

  validation {
    condition     = length(var.ssh_cidrs) > 0 && alltrue([for c in var.ssh_cidrs : can(cidrhost(c, 0))])
    error_message = "The ssh_cidrs must be a non-empty list of IPv4 CIDRs."
  }
}

variable "tags" {
  description = "Tags of every resource (lab, owner, expiry, pfslab), from the lab plan."
  type        = map(string)

  validation {
    condition     = alltrue([for k in ["lab", "owner", "expiry", "pfslab"] : contains(keys(var.tags), k)])
    error_message = "The tags must include lab, owner, expiry and pfslab."
  }
}
