variable "lab_file" {
  description = "Absolute path of the lab (the kit's resolved build/<lab>/lab.json)."
  type        = string

  validation {
    condition     = startswith(var.lab_file, "/") && fileexists(var.lab_file)
    error_message = "The lab_file must be the absolute path of an existing lab file."
  }
}

variable "kit_root" {
  description = "Absolute path of the kit's checkout (unused on AWS; scripts/lab passes it to every root)."
  type        = string

  validation {
    condition     = startswith(var.kit_root, "/")
    error_message = "The kit_root must be an absolute path."
  }
}

variable "state_root" {
  description = "Directory for the lab's state: build/<lab> in the checkout."
  type        = string

  validation {
    condition     = startswith(var.state_root, "/") && var.state_root != "/"
    error_message = "The state_root must be an absolute path other than /."
  }
}

variable "ssh_public_key_file" {
  description = "The lab's public key made by the kit before apply (build/<lab>/ssh/id_ed25519.pub); the private half never reaches Terraform."
  type        = string

  validation {
    condition     = startswith(var.ssh_public_key_file, "/") && endswith(var.ssh_public_key_file, ".pub")
    error_message = "The ssh_public_key_file must be the absolute path of a .pub file."
  }
}

variable "owner" {
  description = "Owner tag; null means the lab file's targets.aws.owner (the kit passes $OWNER or $USER when the file has none)."
  type        = string
  default     = null

  validation {
    condition     = var.owner == null || length(coalesce(var.owner, "x")) <= 128
    error_message = "The owner must be at most 128 characters."
  }
}

variable "expiry" {
  description = "Expiry tag (RFC 3339, UTC), fixed by the kit at the lab's first lab-up."
  type        = string
  default     = null

  validation {
    condition     = var.expiry == null || can(formatdate("YYYY", coalesce(var.expiry, "2000-01-01T00:00:00Z")))
    error_message = "The expiry must be an RFC 3339 timestamp."
  }
}
