variable "lab_file" {
  description = "Path of the lab: labs/<name>.yaml or the kit's resolved build/<lab>/lab.json."
  type        = string

  validation {
    condition     = can(regex("\\.(ya?ml|json)$", var.lab_file)) && fileexists(var.lab_file)
    error_message = "The lab_file must be an existing .yaml or .json file."
  }
}

variable "target" {
  description = "Target to render for: one of targets/<target>/target.json."
  type        = string

  validation {
    condition     = fileexists("${path.module}/../../../targets/${var.target}/target.json")
    error_message = "The target must be one of targets/*/target.json (local, aws, azure, baremetal, ...)."
  }
}

variable "ssh_public_key" {
  description = "Public key to authorise in the user-data (optional; a fixed test key by default is not used)."
  type        = string
  default     = null

  validation {
    condition     = var.ssh_public_key == null || can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) ", coalesce(var.ssh_public_key, "x")))
    error_message = "The ssh_public_key must be an OpenSSH public key line."
  }
}
