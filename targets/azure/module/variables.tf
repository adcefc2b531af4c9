variable "location" {
  description = "Azure region, e.g. eastus."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]+$", var.location))
    error_message = "The location must be an Azure region name such as eastus."
  }
}

variable "resource_group" {
  description = "Name of the resource group the lab creates and deletes with itself."
  type        = string

  validation {
    condition     = can(regex("^[-\\w._()]{1,90}$", var.resource_group))
    error_message = "The resource_group must be 1-90 letters, digits, '-', '_', '.', '(' or ')'."
  }
}

variable "vnet_subnet" {
  description = "CIDR of the VNet and its one subnet (the Ethernet side: SSH, packages)."
  type        = string

  validation {
    condition     = can(cidrhost(var.vnet_subnet, 1))
    error_message = "The vnet_subnet must be an IPv4 network such as 10.30.0.0/24."
  }
}

variable "proximity_placement" {
  description = "Put every VM in one proximity placement group."
  type        = bool

  validation {
    condition     = var.proximity_placement != null
    error_message = "The proximity_placement must be true or false."
  }
}

variable "public_nodes" {
  description = "The nodes that get a public address, the kit's way in over SSH (the lab plan's public_nodes: by default the login node only; the others are reached through it)."
  type        = list(string)

  validation {
    condition     = alltrue([for n in var.public_nodes : contains(keys(var.nodes), n)])
    error_message = "The public_nodes must be nodes of the lab."
  }
}

variable "admin_user" {
  description = "The VMs' admin user (Azure requires one); the lab's key is authorised for it and, through cloud-init, for root."
  type        = string
  default     = "pfslab"

  validation {
    condition     = can(regex("^[a-z_][a-z0-9_-]{0,31}$", var.admin_user)) && !contains(["root", "admin", "administrator"], var.admin_user)
    error_message = "The admin_user must be a valid Linux user name other than root, admin or administrator (Azure reserves them)."
  }
}

variable "ssh_public_key" {
  description = "The lab's OpenSSH public key (build/<lab>/ssh/id_ed25519.pub)."
  type        = string

  validation {
    condition     = can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) ", var.ssh_public_key))
    error_message = "The ssh_public_key must be an OpenSSH public key line."
  }
}

variable "images" {
  description = "Images per kind (server, client): a managed/gallery image id, or a marketplace publisher/offer/sku/version."
  type = map(object({
    id        = optional(string)
    publisher = optional(string)
    offer     = optional(string)
    sku       = optional(string)
    version   = optional(string)
  }))

  validation {
    condition     = contains(keys(var.images), "server") && alltrue([for i in values(var.images) : i.id != null || (i.publisher != null && i.offer != null && i.sku != null)])
    error_message = "The images need a server entry, and each image an id or publisher, offer and sku."
  }
}

variable "machines" {
  description = "Per node, from the lab plan: VM size, image kind, InfiniBand, accelerated networking, OS disk size and its Ethernet address."
  type = map(object({
    type             = string
    image            = string
    infiniband       = bool
    accelerated      = bool
    root_volume_gb   = number
    ethernet_address = string
  }))

  validation {
    condition     = alltrue([for m in values(var.machines) : m.type != null && try(m.root_volume_gb >= 30, false)])
    error_message = "Every node needs a VM size (targets.azure.groups) and an OS disk of at least 30 GB."
  }
}

variable "user_data" {
  description = "Per node, its cloud-init user-data from the lab plan (sent gzipped as custom data)."
  type        = map(string)

  validation {
    condition     = alltrue([for u in values(var.user_data) : startswith(u, "#cloud-config")])
    error_message = "Every user-data must be a #cloud-config document."
  }
}

variable "encryption_at_host" {
  description = "Encrypt the VMs' temp disks and caches on the host (targets.azure.encryption_at_host); the subscription needs the Microsoft.Compute EncryptionAtHost feature."
  type        = bool

  validation {
    condition     = var.encryption_at_host != null
    error_message = "The encryption_at_host must be true or false."
  }
}
