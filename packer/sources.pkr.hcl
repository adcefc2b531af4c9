# One source per target; builds.pkr.hcl names the server and client images built
# from each. Names and tags are set per image role there.

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
  # ami_name and tags are set per image role (builds.pkr.hcl).
  run_tags = merge(local.base_tags, { "Name" = "pfslab-image-builder" })
}

# Azure: Microsoft's HPC image (InfiniBand drivers, UCX), a managed image in the
# labs' image resource group.
source "azure-arm" "hpc" {
  subscription_id    = var.azure_subscription_id
  client_id          = var.azure_client_id
  client_secret      = var.azure_client_secret
  tenant_id          = var.azure_tenant_id
  use_azure_cli_auth = var.azure_use_cli_auth

  location        = var.azure_location
  vm_size         = var.azure_vm_size
  os_type         = "Linux"
  image_publisher = var.azure_image.publisher
  image_offer     = var.azure_image.offer
  image_sku       = var.azure_image.sku
  image_version   = var.azure_image.version

  # managed_image_name and azure_tags are set per image role (builds.pkr.hcl).
  managed_image_resource_group_name = var.azure_resource_group
}

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

  # vm_name is set per image role (builds.pkr.hcl).
  output_directory = var.qemu_output_dir
  disk_compression = true
}
