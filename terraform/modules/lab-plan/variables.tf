variable "lab_file" {
  description = "Path of the lab as the kit resolved it (build/<lab>/lab.json, written by `pfslab lab show [--target T]`): `extends` applied, defaults filled in and its layout derived. The plan reads nothing else about the lab."
  type        = string

  validation {
    condition     = endswith(var.lab_file, ".json") && fileexists(var.lab_file)
    error_message = "The lab_file must be an existing resolved lab (.json), such as build/<lab>/lab.json from `pfslab lab show <lab>`."
  }

  validation {
    condition     = !fileexists(var.lab_file) || can(jsondecode(file(var.lab_file)).derived.nodes)
    error_message = "The lab_file has no derived layout: give the kit's resolved lab (`pfslab lab show <lab>`), not a lab file."
  }
}

variable "target" {
  description = "Provisioning target the lab was resolved for: one of targets/<target>/target.json. Null means the resolved lab's. A root that provisions one target names it, so that a lab resolved for another is refused."
  type        = string
  default     = null

  validation {
    condition     = var.target == null || fileexists("${path.module}/../../../targets/${coalesce(var.target, "local")}/target.json")
    error_message = "The target must be one of targets/*/target.json (local, aws, azure, baremetal, ...)."
  }

  validation {
    condition     = var.target == null || !can(jsondecode(file(var.lab_file)).derived.target) || try(jsondecode(file(var.lab_file)).derived.target == var.target, false)
    error_message = "The lab_file was resolved for another target: resolve it with `pfslab lab show --target <target> <lab>`."
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

variable "ssh_public_key" {
  description = "OpenSSH public key of the lab (build/<lab>/ssh/id_ed25519.pub, made by the kit before apply) that cloud-init authorises for root on every node. Null leaves keys to the target (AWS key pair, Azure admin key, MAAS user keys). Only the public half ever reaches Terraform."
  type        = string
  default     = null

  validation {
    condition     = var.ssh_public_key == null || can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) [A-Za-z0-9+/=]+( .*)?$", coalesce(var.ssh_public_key, "x")))
    error_message = "The ssh_public_key must be one OpenSSH public key line (ssh-ed25519 AAAA... comment)."
  }
}

variable "owner" {
  description = "Value of the owner tag on every cloud resource. Null means the lab file's targets.<target>.owner, else \"unknown\"."
  type        = string
  default     = null

  validation {
    condition     = var.owner == null || can(regex("^[A-Za-z0-9_.:/=+@ -]{1,128}$", coalesce(var.owner, "x")))
    error_message = "The owner must be 1-128 letters, digits, spaces or _ . : / = + - @ (allowed in AWS and Azure tag values)."
  }
}

variable "expiry" {
  description = "Value of the expiry tag (RFC 3339, UTC), fixed by the kit at the lab's first lab-up so that later applies do not change it. Null means the plan time plus targets.<target>.expiry_hours (default 8)."
  type        = string
  default     = null

  validation {
    condition     = var.expiry == null || can(formatdate("YYYY", coalesce(var.expiry, "2000-01-01T00:00:00Z")))
    error_message = "The expiry must be an RFC 3339 timestamp such as 2026-11-30T18:00:00Z."
  }
}

variable "deployment" {
  description = "Value of the deployment tag: a random id the kit draws at the lab's first lab-up (build/<lab>/deployment). lab-down removes what carries it even when an interrupted apply left it out of the Terraform state; what carries the lab's tags without it was made by someone else, and is only reported. Null leaves the tag out."
  type        = string
  default     = null

  validation {
    condition     = var.deployment == null || can(regex("^[0-9a-f]{16}$", coalesce(var.deployment, "x")))
    error_message = "The deployment must be 16 lower-case hex digits (scripts/lab draws it)."
  }
}

variable "node_kit_root" {
  description = "Where the kit is installed on cloud and bare-metal nodes (baked into the images by Packer); cloud-init runs its role scripts from there."
  type        = string
  default     = "/opt/pfslab"

  validation {
    condition     = startswith(var.node_kit_root, "/") && !strcontains(var.node_kit_root, " ")
    error_message = "The node_kit_root must be an absolute path without spaces."
  }
}
