# The baremetal target's image source and variables: the qemu image built here
# (scripts/images qemu), which MAAS deploys (custom/pfslab-<role>) and local VMs boot.
# scripts/images assembles this file with packer/ (packer/README.md).

# QEMU: the Debian base made by scripts/images (mmdebstrap), booted directly with
# its kernel, configured by a NoCloud seed on a CD labelled cidata.
source "qemu" "debian" {
  iso_url      = var.qemu_base_image
  iso_checksum = var.qemu_base_checksum
  disk_image   = true
  disk_size    = var.qemu_disk_size
  format       = "qcow2"

  accelerator    = var.qemu_accelerator
  cpus           = var.qemu_cpus
  memory         = var.qemu_memory
  disk_interface = "virtio"
  net_device     = "virtio-net"
  headless       = true
  qemuargs = [
    ["-cpu", var.qemu_cpu_model],
    ["-kernel", var.qemu_kernel],
    ["-initrd", var.qemu_initrd],
    ["-append", var.qemu_kernel_append],
    ["-serial", "file:${var.qemu_serial_log}"],
  ]

  cd_files = ["${var.qemu_seed_dir}/user-data", "${var.qemu_seed_dir}/meta-data"]
  cd_label = "cidata"

  communicator         = "ssh"
  ssh_username         = "pfslab-build"
  ssh_private_key_file = var.qemu_ssh_private_key_file
  ssh_timeout          = var.qemu_ssh_timeout
  # The build account goes with the build: its sudo rule, then the account, then power
  # off, in one sudo (a later step could no longer become root).
  shutdown_command = "sudo sh -c 'rm -f /etc/sudoers.d/90-cloud-init-users && userdel --force --remove pfslab-build 2>/dev/null; shutdown -P now'"
  shutdown_timeout = "10m"

  vm_name          = "pfslab-${var.role}-${var.family}-${local.digest_short}.qcow2"
  output_directory = var.qemu_output_dir
  disk_compression = true
}

# What the shared build steps take from this target (local.image.<builder> in the
# assembled templates): its fabric packages (ethernet) and whether
# toolchain=auto gives its client images the Spack toolchain (only when asked (toolchain=on or distro: it needs the internet and hours)).
locals {
  target_baremetal = {
    fabric         = "ethernet"
    toolchain_auto = false
  }
}

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
