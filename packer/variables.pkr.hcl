# Inputs of every image build. scripts/images sets the kit ones (kit_root,
# kit_archive, image_digest) and, for qemu, the base and seed paths; the rest have
# defaults. Validation uses only functions Debian's Packer 1.6.6 has (no regex()).

# ---- the kit ---------------------------------------------------------------------------

variable "kit_root" {
  description = "Absolute path of the pfslab checkout (the provisioning scripts under packer/scripts are read from it)."
  type        = string
  default     = "."
}

variable "kit_archive" {
  description = "The kit archive Packer copies into the image: a .tar.gz of the files scripts/image-digest covers (scripts/images makes it under build/images/)."
  type        = string
  validation {
    condition     = length(var.kit_archive) > 7 && substr(var.kit_archive, length(var.kit_archive) - 7, 7) == ".tar.gz"
    error_message = "The kit_archive must be the .tar.gz that scripts/images writes (build/images/kit-<digest>.tar.gz)."
  }
}

variable "image_digest" {
  description = "sha256 of the kit files in the image (scripts/image-digest): written to /etc/pfslab/image.json and into the image's name and tags."
  type        = string
  validation {
    condition     = length(var.image_digest) == 64 && length(regex_replace(var.image_digest, "[0-9a-f]", "")) == 0
    error_message = "The image_digest must be 64 lower-case hex digits, as scripts/image-digest prints."
  }
}

variable "role" {
  description = "Which image this build makes: server (the family's server components) or client (its client and the Spack toolchain)."
  type        = string
  validation {
    condition     = contains(["server", "client"], var.role)
    error_message = "The role must be server or client."
  }
}

variable "family" {
  description = "File system family the images serve: its role script (scripts/roles/<family>) installs the server or client components."
  type        = string
  default     = "ceph"
  validation {
    condition     = length(regex_replace(var.family, "^[a-z][a-z0-9]{1,15}$", "")) == 0
    error_message = "The family must be a family name of families/*/family.json (lower-case letters and digits), e.g. ceph."
  }
}

variable "filesystem_settings" {
  description = "JSON object given to the role's install step as the node config's filesystem.<family> (e.g. {\"installer\": \"/path\"} for GPFS; a setting left out takes its registry default, e.g. BeeGFS's release)."
  type        = string
  default     = "{}"
  validation {
    condition     = can(keys(jsondecode(var.filesystem_settings)))
    error_message = "The filesystem_settings must be a JSON object, e.g. {} or {\"installer\": \"/path\"}."
  }
}

variable "fabric" {
  description = "Fabric packages per builder type (common role, `install fabric`), over the one its target's image.pkr.hcl names (amazon-ebs efa, azure-arm none: the Azure HPC image has its InfiniBand stack, qemu ethernet): efa, infiniband, roce, omnipath, ethernet, or none to rely on what the base image brings."
  type        = map(string)
  default     = {}
  validation {
    condition     = length([for f in values(var.fabric) : f if contains(["efa", "infiniband", "ipoib", "roce", "omnipath", "ethernet", "none"], f)]) == length(var.fabric)
    error_message = "Each fabric must be one of efa, infiniband, ipoib, roce, omnipath, ethernet, none."
  }
}

variable "toolchain" {
  description = "The benchmark toolchain of client images: auto = the Spack toolchain (scripts/toolchain: IOR, mdtest, fio, ...) where the target's image.pkr.hcl says toolchain_auto (amazon-ebs, azure-arm), none elsewhere (qemu: it needs the internet and hours); on = Spack everywhere; distro = the distribution's fio, IOzone, Open MPI and the kit's Python environment (scripts/deps login; minutes, no IOR/mdtest); off."
  type        = string
  default     = "auto"
  validation {
    condition     = contains(["auto", "on", "off", "distro"], var.toolchain)
    error_message = "The toolchain must be auto, on, off or distro."
  }
}

variable "toolchain_env" {
  description = "Extra environment for scripts/toolchain in the image, as NAME=value strings (e.g. [\"PFSLAB_SPACK_INSTALL_ARGS=-j 16\"])."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Extra tags (AWS, Azure) merged into the image's tags; the pfslab-* tags always win."
  type        = map(string)
  default     = {}
}

variable "owner" {
  description = "Value of the owner tag on the images and the build machines."
  type        = string
  default     = "pfslab"
  validation {
    condition     = length(var.owner) > 0
    error_message = "The owner tag must not be empty."
  }
}
