variable "kit_root" {
  description = "Absolute path of the kit's checkout; the provisioners run its scripts."
  type        = string

  validation {
    condition     = startswith(var.kit_root, "/")
    error_message = "The kit_root must be an absolute path."
  }
}

variable "lab_file" {
  description = "Absolute path of the resolved lab (build/<lab>/lab.json); prepare copies it into run_root for other checkouts' collision checks."
  type        = string

  validation {
    condition     = startswith(var.lab_file, "/")
    error_message = "The lab_file must be an absolute path."
  }
}

variable "node_names" {
  description = "Per node, its network namespace and the host side of its veth pair (the resolved lab's instance.nodes, from pfslab/names.py)."
  type        = map(object({ netns = string, veth = string }))

  validation {
    condition = alltrue([for n in values(var.node_names) :
      can(regex("^pfs-[0-9a-f]{6}-[a-z][a-z0-9]{0,15}$", n.netns)) && can(regex("^pfv[0-9a-f]{6}[0-9a-z]{3}$", n.veth))
    ])
    error_message = "Each node's netns must be 'pfs-', six hex digits and the node's name, and its veth 'pfv', six hex digits and three base-36 digits (from pfslab lab show --instance)."
  }
}

variable "state_root" {
  description = "Directory holding the lab's node state, logs and cluster config (removed by destroy)."
  type        = string

  validation {
    condition     = startswith(var.state_root, "/")
    error_message = "The state_root must be an absolute path."
  }
}

variable "run_root" {
  description = "Directory for pid files, admin sockets and node records (short path: unix sockets are limited to 107 bytes)."
  type        = string

  validation {
    condition     = startswith(var.run_root, "/") && length(var.run_root) <= 40
    error_message = "The run_root must be an absolute path of at most 40 characters."
  }
}

variable "mount_path" {
  description = "The common path at which benchmark ranks see the file system."
  type        = string

  validation {
    condition     = startswith(var.mount_path, "/") && var.mount_path != "/"
    error_message = "The mount_path must be an absolute path other than /."
  }
}

variable "bridge" {
  description = "Name of the Linux bridge the node namespaces attach to."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{0,11}$", var.bridge))
    error_message = "The bridge must be 1-12 lower-case letters or digits, starting with a letter."
  }
}

variable "subnet" {
  description = "The lab's subnet; the host's bridge takes its first address."
  type        = string

  validation {
    condition     = can(cidrhost(var.subnet, 1))
    error_message = "The subnet must be an IPv4 network such as 10.99.0.0/24."
  }
}

variable "nodes" {
  description = "Nodes from the lab plan (name => {address, paths, ...})."
  type = map(object({
    address = string
    roles   = list(string)
    paths   = map(string)
  }))
}

variable "node_configs" {
  description = "Per node, the JSON config its roles read (from the lab plan)."
  type        = map(string)
}

variable "phases" {
  description = "Start order from the lab plan: exactly five maps of \"node/role\" => {node, role}."
  type        = list(map(object({ node = string, role = string })))

  validation {
    condition     = length(var.phases) == 5
    error_message = "The lab plan must give exactly five phases (empty ones included)."
  }
}

variable "head_client" {
  description = "Client node whose mount the host binds at mount_path (the host acts as the login node)."
  type        = string

  validation {
    condition     = length(var.head_client) > 0
    error_message = "The head_client must name a client node."
  }
}
