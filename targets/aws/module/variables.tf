variable "resource_name" {
  description = "Name of what must be unique in the account (key pair, security and placement groups) and prefix of the Name tags: the resolved lab's instance.cloud_name (pfslab/instance.py), so two owners' labs of one name do not collide."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{1,255}$", var.resource_name)) && !startswith(var.resource_name, "sg-")
    error_message = "The resource_name must be 1-255 letters, digits, '.', '_' or '-', not starting with sg- (a name EC2 allows a key pair, a security group and a placement group alike)."
  }
}

variable "subnet_cidr" {
  description = "The lab's network.subnet: CIDR of the VPC and subnet the adapter creates, or of the existing subnet_id."
  type        = string

  validation {
    condition     = can(cidrhost(var.subnet_cidr, 1))
    error_message = "The subnet_cidr must be an IPv4 network such as 10.20.0.0/24."
  }
}

variable "availability_zone" {
  description = "Zone of the subnet and the cluster placement group (one zone; pinned by the lab file so the lab never moves)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$", var.availability_zone))
    error_message = "The availability_zone must look like us-east-1a."
  }
}

variable "vpc_id" {
  description = "An existing VPC (with subnet_id); null creates a VPC, subnet, internet gateway and route table for the lab."
  type        = string
  default     = null

  validation {
    condition     = var.vpc_id == null || can(regex("^vpc-[0-9a-f]{8,17}$", coalesce(var.vpc_id, "vpc-00000000")))
    error_message = "The vpc_id must look like vpc-0123456789abcdef0."
  }
}

variable "subnet_id" {
  description = "An existing subnet of vpc_id whose CIDR is the lab's subnet; null creates one."
  type        = string
  default     = null

  validation {
    condition     = var.subnet_id == null || can(regex("^subnet-[0-9a-f]{8,17}$", coalesce(var.subnet_id, "subnet-00000000")))
    error_message = "The subnet_id must look like subnet-0123456789abcdef0."
  }
}

variable "placement" {
  description = "cluster: one cluster placement group for every instance (EFA's low-latency case); none: no placement group."
  type        = string

  validation {
    condition     = contains(["cluster", "none"], var.placement)
    error_message = "The placement must be cluster or none."
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

variable "ssh_public_key" {
  description = "The lab's OpenSSH public key (build/<lab>/ssh/id_ed25519.pub); imported as the lab's key pair."
  type        = string

  validation {
    condition     = can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) ", var.ssh_public_key))
    error_message = "The ssh_public_key must be an OpenSSH public key line."
  }
}

variable "images" {
  description = "AMIs per image kind (server, client): an exact id, or a name filter and owners (the newest match is used)."
  type = map(object({
    id     = optional(string)
    name   = optional(string)
    owners = optional(list(string))
  }))

  validation {
    condition     = contains(keys(var.images), "server") && alltrue([for i in values(var.images) : i.id != null || i.name != null])
    error_message = "The images need a server entry, and each image an id or a name."
  }
}

variable "machines" {
  description = "Per node, from the lab plan: instance type, image kind, EFA interfaces (one per network card), instance-store drives and root volume size."
  type = map(object({
    type           = string
    image          = string
    efa_interfaces = number
    local_nvme     = number
    root_volume_gb = number
  }))

  validation {
    condition     = alltrue([for m in values(var.machines) : m.type != null && m.efa_interfaces >= 0 && m.efa_interfaces <= 32])
    error_message = "Every node needs an instance type (targets.aws.groups) and 0-32 EFA interfaces."
  }
}

variable "user_data" {
  description = "Per node, its cloud-init user-data from the lab plan (sent gzipped)."
  type        = map(string)

  validation {
    condition     = alltrue([for u in values(var.user_data) : startswith(u, "#cloud-config")])
    error_message = "Every user-data must be a #cloud-config document."
  }
}
