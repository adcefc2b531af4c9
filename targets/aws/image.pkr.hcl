# The aws target's image source and variables (scripts/images assembles them with
# packer/, whose one build lists this source: packer/README.md).

# AWS: Debian 12 AMI, EFA-capable builder, EBS-backed AMI named
# pfslab-<role>-<family>-<digest12>-<time> (the labs look for pfslab-<role>-*).
source "amazon-ebs" "debian" {
  region        = var.aws_region
  instance_type = var.aws_instance_type
  subnet_id     = var.aws_subnet_id
  ssh_username  = var.aws_ssh_username
  ena_support   = true
  sriov_support = true
  source_ami_filter {
    filters = {
      name                = var.aws_source_ami_name
      architecture        = "x86_64"
      virtualization-type = "hvm"
      root-device-type    = "ebs"
    }
    owners      = var.aws_source_ami_owners
    most_recent = true
  }
  launch_block_device_mappings {
    device_name           = "/dev/xvda"
    volume_size           = var.aws_volume_size
    volume_type           = "gp3"
    iops                  = 3000
    throughput            = 125
    delete_on_termination = true
  }
  ami_name = "pfslab-${var.role}-${var.family}-${local.digest_short}-${local.stamp}"
  tags     = merge(local.base_tags, { "Name" = "pfslab-${var.role}-${var.family}-${local.digest_short}", "pfslab-role" = var.role })
  run_tags = merge(local.base_tags, { "Name" = "pfslab-image-builder" })
}

# What the shared build steps take from this target (local.image.<builder> in the
# assembled templates): its fabric packages (EFA (efa.sh installs AWS's driver first)) and whether
# toolchain=auto gives its client images the Spack toolchain (on client images (toolchain=auto)).
locals {
  target_aws = {
    fabric         = "efa"
    toolchain_auto = true
  }
}

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

