variable "nodes" {
  description = "Nodes from the lab plan that MAAS allocates and deploys: name => {address, roles}."
  type = map(object({
    address = string
    roles   = list(string)
  }))

  validation {
    condition     = alltrue([for n in values(var.nodes) : can(cidrhost("${n.address}/32", 0))])
    error_message = "Every node needs an IPv4 address."
  }
}

variable "machines" {
  description = "Per node, from the lab plan: MAAS tags that select a machine and the image (distro_series) to deploy."
  type = map(object({
    maas_tags     = list(string)
    distro_series = string
  }))

  validation {
    condition     = alltrue([for m in values(var.machines) : length(m.maas_tags) > 0])
    error_message = "Every MAAS node needs maas_tags (targets.baremetal.groups.<group>.maas_tags), so the right hardware is allocated."
  }
}

variable "subnet_cidr" {
  description = "The lab's network.subnet, a MAAS subnet; each machine gets its plan address in it (static)."
  type        = string

  validation {
    condition     = can(cidrhost(var.subnet_cidr, 1))
    error_message = "The subnet_cidr must be an IPv4 network such as 10.10.0.0/16."
  }
}

variable "interface" {
  description = "Machine interface that carries the lab subnet."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.:-]{1,15}$", var.interface))
    error_message = "The interface must be a Linux interface name."
  }
}

variable "zone" {
  description = "MAAS zone to allocate from (null: any)."
  type        = string
  default     = null

  validation {
    condition     = var.zone == null || length(coalesce(var.zone, "x")) > 0
    error_message = "The zone must be a MAAS zone name."
  }
}

variable "pool" {
  description = "MAAS resource pool to allocate from (null: any)."
  type        = string
  default     = null

  validation {
    condition     = var.pool == null || length(coalesce(var.pool, "x")) > 0
    error_message = "The pool must be a MAAS resource pool name."
  }
}

variable "user_data" {
  description = "Per node, its cloud-init user-data from the lab plan."
  type        = map(string)

  validation {
    condition     = alltrue([for u in values(var.user_data) : startswith(u, "#cloud-config")])
    error_message = "Every user-data must be a #cloud-config document."
  }
}
