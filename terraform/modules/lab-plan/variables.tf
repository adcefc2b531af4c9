variable "lab_file" {
  description = "Path of the lab: a lab file (labs/<name>.yaml) or the kit's resolved copy (build/<lab>/lab.json, with `extends` applied). The plan reads nothing else about the lab."
  type        = string

  validation {
    condition     = can(regex("\\.(ya?ml|json)$", var.lab_file)) && fileexists(var.lab_file)
    error_message = "The lab_file must be an existing .yaml or .json file, such as labs/local.yaml."
  }
}

variable "target" {
  description = "Provisioning target: local, aws, azure or baremetal. Null means the lab file's own target."
  type        = string
  default     = null

  validation {
    condition     = var.target == null || contains(["local", "aws", "azure", "baremetal"], coalesce(var.target, "local"))
    error_message = "The target must be one of local, aws, azure, baremetal."
  }
}

variable "paths" {
  description = "Where a node keeps its state, runtime files, logs, cluster config and client mount. '{node}' stands for the node's name. Null fields take the target's defaults."
  type = object({
    state   = optional(string)
    run     = optional(string)
    log     = optional(string)
    cluster = optional(string)
    mount   = optional(string)
  })
  default = {}

  validation {
    condition     = alltrue([for p in values(var.paths) : p == null || startswith(coalesce(p, "/"), "/")])
    error_message = "Every path must be absolute."
  }
}

variable "first_address" {
  description = "Host number, within the lab's subnet, of the first node; lower numbers stay free for gateways and the host bridge."
  type        = number
  default     = 10

  validation {
    condition     = var.first_address >= 2 && var.first_address == floor(var.first_address)
    error_message = "The first_address must be a whole number of at least 2."
  }
}
