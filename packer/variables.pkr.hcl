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
  description = "Fabric packages per builder (common role, `install fabric`): efa, infiniband, roce, omnipath, ethernet, or none to rely on what the base image brings (the Azure HPC image has its InfiniBand stack)."
  type        = map(string)
  default = {
    "amazon-ebs" = "efa"
    "azure-arm"  = "none"
    "qemu"       = "ethernet"
  }
  validation {
    condition     = length([for f in values(var.fabric) : f if contains(["efa", "infiniband", "ipoib", "roce", "omnipath", "ethernet", "none"], f)]) == length(var.fabric)
    error_message = "Each fabric must be one of efa, infiniband, ipoib, roce, omnipath, ethernet, none."
  }
}

variable "toolchain" {
  description = "The benchmark toolchain of client images: auto = the Spack toolchain (scripts/toolchain: IOR, mdtest, fio, ...) on amazon-ebs and azure-arm, none on qemu (it needs the internet and hours); on = Spack everywhere; distro = the distribution's fio, IOzone, Open MPI and the kit's Python environment (scripts/deps login; minutes, no IOR/mdtest); off."
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

# ---- amazon-ebs --------------------------------------------------------------------------

variable "aws_region" {
  description = "AWS region the AMIs are built and registered in."
  type        = string
  default     = "us-east-1"
}

variable "aws_instance_type" {
  description = "Builder instance type. EFA-capable (c5n.9xlarge and larger, hpc*, p4d...), so the EFA driver the image gets loads at build time."
  type        = string
  default     = "c5n.9xlarge"
  validation {
    condition     = length(split(".", var.aws_instance_type)) == 2
    error_message = "The aws_instance_type must look like family.size, e.g. c5n.9xlarge."
  }
}

variable "aws_source_ami_name" {
  description = "Name filter of the source AMI (newest match): Debian 12 by default, the system the kit and its roles are tested on."
  type        = string
  default     = "debian-12-amd64-*"
}

variable "aws_source_ami_owners" {
  description = "Owners of the source AMI; 136693071363 is Debian's cloud team."
  type        = list(string)
  default     = ["136693071363"]
}

variable "aws_ssh_username" {
  description = "Login user of the source AMI (Debian: admin)."
  type        = string
  default     = "admin"
}

variable "aws_volume_size" {
  description = "Root volume size of the AMI in GiB (the client's Spack toolchain needs room)."
  type        = number
  default     = 40
  validation {
    condition     = var.aws_volume_size >= 8
    error_message = "The aws_volume_size must be at least 8 GiB."
  }
}

variable "aws_subnet_id" {
  description = "Subnet of the builder instance; empty = the default VPC's."
  type        = string
  default     = ""
}

variable "aws_efa_installer_version" {
  description = "Version of AWS's EFA installer (kernel driver, libfabric) baked into AMIs; empty skips it. Changing it means changing aws_efa_installer_sha256 too."
  type        = string
  default     = "1.38.0"
}

# The pin efa.sh checks the tarball against before unpacking it. 1.38.0's is the value
# AWS itself pins for that release in aws-parallelcluster-cookbook (attributes/environment.rb);
# AWS also publishes it next to the tarball (aws-efa-installer-<version>.tar.gz.sha256).
variable "aws_efa_installer_sha256" {
  description = "sha256 of aws-efa-installer-<aws_efa_installer_version>.tar.gz (64 hex digits); efa.sh refuses a tarball that does not match. Empty only with an empty version."
  type        = string
  default     = "4f436954f35ad53754b4d005fd8d0be63de3b4184de41a695b504bdce0fecb22"

  validation {
    condition     = length(var.aws_efa_installer_sha256) == 64 || var.aws_efa_installer_sha256 == ""
    error_message = "The aws_efa_installer_sha256 must be 64 hex digits (or empty when aws_efa_installer_version is empty)."
  }
}

# ---- azure-arm ---------------------------------------------------------------------------

variable "azure_subscription_id" {
  description = "Azure subscription; default $ARM_SUBSCRIPTION_ID."
  type        = string
  default     = env("ARM_SUBSCRIPTION_ID")
}

variable "azure_client_id" {
  description = "Service principal id; default $ARM_CLIENT_ID. Empty: Azure CLI login (azure_use_cli_auth) or managed identity."
  type        = string
  default     = env("ARM_CLIENT_ID")
}

variable "azure_client_secret" {
  description = "Service principal secret; default $ARM_CLIENT_SECRET."
  type        = string
  default     = env("ARM_CLIENT_SECRET")
  sensitive   = true
}

variable "azure_tenant_id" {
  description = "Azure AD tenant; default $ARM_TENANT_ID."
  type        = string
  default     = env("ARM_TENANT_ID")
}

variable "azure_use_cli_auth" {
  description = "Authenticate with the Azure CLI's login (az login) instead of a service principal."
  type        = bool
  default     = false
}

variable "azure_location" {
  description = "Azure region the managed images are built in."
  type        = string
  default     = "eastus"
}

variable "azure_resource_group" {
  description = "Resource group holding the managed images (the labs' targets.azure.images ids point here)."
  type        = string
  default     = "pfslab-images"
}

variable "azure_vm_size" {
  description = "Builder VM size. The HPC image's InfiniBand drivers are already in it, so any Gen2 size builds it."
  type        = string
  default     = "Standard_D8s_v5"
}

variable "azure_image" {
  description = "Source marketplace image: Microsoft's HPC image (Mellanox OFED, UCX, HPC-X) by default."
  type = object({
    publisher = string
    offer     = string
    sku       = string
    version   = string
  })
  default = {
    publisher = "microsoft-dsvm"
    offer     = "ubuntu-hpc"
    sku       = "2204"
    version   = "latest"
  }
}

# ---- qemu (bare metal and local VMs) -------------------------------------------------------

variable "qemu_base_image" {
  description = "The Debian base (qcow2) scripts/images builds with mmdebstrap: build/images/base-<digest>.qcow2."
  type        = string
  default     = "build/images/base.qcow2"
}

variable "qemu_base_checksum" {
  description = "Checksum of qemu_base_image as Packer wants it (sha256:<hex>)."
  type        = string
  default     = "none"
}

variable "qemu_kernel" {
  description = "Kernel of the base, booted directly (no boot loader in the image)."
  type        = string
  default     = "build/images/base.vmlinuz"
}

variable "qemu_initrd" {
  description = "Initramfs of the base, booted with qemu_kernel."
  type        = string
  default     = "build/images/base.initrd"
}

variable "qemu_kernel_append" {
  description = "Kernel command line: the root file system's label and the serial console."
  type        = string
  default     = "root=LABEL=pfslab-root ro console=ttyS0 net.ifnames=0"
}

variable "qemu_seed_dir" {
  description = "Directory holding user-data and meta-data of the build's NoCloud seed (scripts/images writes them: a build user with a one-off SSH key)."
  type        = string
  default     = "build/images/seed"
}

variable "qemu_ssh_private_key_file" {
  description = "Private half of the one-off key in the seed's user-data."
  type        = string
  default     = "build/images/seed/id_ed25519"
}

variable "qemu_accelerator" {
  description = "kvm, or tcg where KVM is missing or unusable (software emulation: several times slower)."
  type        = string
  default     = "tcg"
  validation {
    condition     = contains(["kvm", "tcg"], var.qemu_accelerator)
    error_message = "The qemu_accelerator must be kvm or tcg."
  }
}

variable "qemu_cpu_model" {
  description = "QEMU CPU model: host under KVM, max under TCG."
  type        = string
  default     = "max"
}

variable "qemu_cpus" {
  description = "vCPUs of the build VM."
  type        = number
  default     = 2
}

variable "qemu_memory" {
  description = "Memory of the build VM in MiB."
  type        = number
  default     = 2048
  validation {
    condition     = var.qemu_memory >= 1024
    error_message = "The build VM needs at least 1024 MiB."
  }
}

variable "qemu_disk_size" {
  description = "Virtual size of the image's disk (the first boot grows the root file system to it)."
  type        = string
  default     = "8G"
}

variable "qemu_output_dir" {
  description = "Directory Packer writes the qcow2 into; it must not exist (scripts/images uses a staging directory under build/images/)."
  type        = string
  default     = "build/images/staging"
}

variable "qemu_serial_log" {
  description = "File receiving the build VM's serial console (kernel and cloud-init messages)."
  type        = string
  default     = "build/images/serial.log"
}

variable "qemu_ssh_timeout" {
  description = "How long to wait for the build VM's SSH (TCG boots take about a minute)."
  type        = string
  default     = "30m"
}
