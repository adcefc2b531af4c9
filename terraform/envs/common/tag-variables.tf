# The tags every root that plans a lab for a cloud or bare-metal target passes to the
# lab plan (aws, azure, baremetal, MAAS, render). Linked into each as tag-variables.tf.

variable "owner" {
  description = "Owner tag; null means the lab file's targets.<target>.owner, else unknown (scripts/lab passes $OWNER or $USER when the file has none)."
  type        = string
  default     = null

  validation {
    condition     = var.owner == null || length(coalesce(var.owner, "x")) <= 128
    error_message = "The owner must be at most 128 characters."
  }
}

variable "expiry" {
  description = "Expiry tag (RFC 3339, UTC); null means now plus the lab's expiry_hours (scripts/lab fixes it at the lab's first lab-up)."
  type        = string
  default     = null

  validation {
    condition     = var.expiry == null || can(formatdate("YYYY", coalesce(var.expiry, "2000-01-01T00:00:00Z")))
    error_message = "The expiry must be an RFC 3339 timestamp."
  }
}

variable "deployment" {
  description = "Deployment tag: the random id scripts/lab draws at the lab's first lab-up (build/<lab>/deployment); null leaves the tag out."
  type        = string
  default     = null

  validation {
    condition     = var.deployment == null || can(regex("^[0-9a-f]{16}$", coalesce(var.deployment, "x")))
    error_message = "The deployment must be 16 lower-case hex digits."
  }
}
