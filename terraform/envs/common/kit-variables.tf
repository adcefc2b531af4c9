# What scripts/lab passes to every root. One file, linked into each root
# (terraform/envs/*/kit-variables.tf), so the roots cannot drift apart.

variable "lab_file" {
  description = "Absolute path of the lab as the kit resolved and validated it (build/<lab>/lab.json)."
  type        = string

  validation {
    condition     = startswith(var.lab_file, "/") && fileexists(var.lab_file)
    error_message = "The lab_file must be the absolute path of an existing lab file."
  }
}

variable "kit_root" {
  description = "Absolute path of the kit's checkout (the local root runs its scripts; cloud roots ignore it)."
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
