# What scripts/lab passes to every root whose nodes it reaches over SSH (aws, azure,
# baremetal, MAAS). Linked into each of them as remote-variables.tf.

variable "ssh_public_key_file" {
  description = "The lab's public key made by the kit before apply (build/<lab>/ssh/id_ed25519.pub); existing hosts must authorise it, cloud and MAAS nodes get it through cloud-init. The private half never reaches Terraform."
  type        = string

  validation {
    condition     = startswith(var.ssh_public_key_file, "/") && endswith(var.ssh_public_key_file, ".pub")
    error_message = "The ssh_public_key_file must be the absolute path of a .pub file."
  }
}

variable "owner" {
  description = "Owner tag; null means the lab file's targets.<target>.owner (the kit passes $OWNER or $USER when the file has none)."
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
