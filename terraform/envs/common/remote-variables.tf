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
