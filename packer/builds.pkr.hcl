# One build makes either image from any source: `packer build -var role=client
# -only=image.qemu.debian` (scripts/images picks them). Both roles get the kit at
# /opt/pfslab, cloud-init and jq, the common role's tuning (and fabric) packages and
# /etc/pfslab/image.json; the server image the family's server components, the client
# image its client and the Spack toolchain. Provisioning scripts: packer/scripts/*.sh
# (run as root on the image). The steps only one source runs name it in `only`.

build {
  name = "image"

  # Every source of targets/*/image.pkr.hcl (each sets its own image name and tags):
  # scripts/images writes the list when it assembles the templates
  # (pfslab/images/templates.py); a target with an image adds no line here.
  sources = []

  provisioner "shell" {
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/wait-cloud-init.sh"
  }

  provisioner "file" {
    source      = var.kit_archive
    destination = "/tmp/pfslab-kit.tar.gz"
  }

  provisioner "shell" {
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/install-kit.sh"
    environment_vars = [
      "PFSLAB_IMAGE_JSON=${jsonencode({
        role       = var.role
        family     = var.family
        components = local.components
        digest     = var.image_digest
        builder    = source.type
        target     = local.target[source.type]
        built_at   = local.built_at
        toolchain  = local.toolchain[source.type]
      })}",
    ]
  }

  provisioner "shell" {
    only            = ["amazon-ebs.debian"]
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/efa.sh"
    environment_vars = [
      "PFSLAB_EFA_INSTALLER_VERSION=${var.aws_efa_installer_version}",
      "PFSLAB_EFA_INSTALLER_SHA256=${var.aws_efa_installer_sha256}",
    ]
  }

  provisioner "shell" {
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/install-roles.sh"
    environment_vars = [
      "PFSLAB_FAMILY=${var.family}",
      "PFSLAB_COMPONENTS=${join(" ", local.components)}",
      "PFSLAB_FABRIC=${local.fabric[source.type]}",
      "PFSLAB_TARGET=${local.target[source.type]}",
      "PFSLAB_FS_SETTINGS=${jsonencode(local.filesystem_settings)}",
    ]
  }

  # The Spack toolchain (scripts/toolchain, when the kit has it) on client images: IOR,
  # mdtest, fio...
  provisioner "shell" {
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/toolchain.sh"
    environment_vars = concat([
      "PFSLAB_TOOLCHAIN=${local.toolchain_mode[source.type]}",
      "PFSLAB_FAMILY=${var.family}",
    ], var.toolchain_env)
  }

  # qemu: the image's own kernel and initramfs, booted directly beside the disk. One
  # file each: Packer 1.6.6 writes a multi-source download's second file over the
  # first's name.
  provisioner "file" {
    only        = ["qemu.debian"]
    direction   = "download"
    source      = "/vmlinuz"
    destination = "${var.qemu_output_dir}/vmlinuz"
  }
  provisioner "file" {
    only        = ["qemu.debian"]
    direction   = "download"
    source      = "/initrd.img"
    destination = "${var.qemu_output_dir}/initrd"
  }

  provisioner "shell" {
    execute_command = local.sudo_execute
    script          = "${var.kit_root}/packer/scripts/cleanup.sh"
  }

  # Azure's own generalisation (removes the build user too), as Azure requires.
  provisioner "shell" {
    only            = ["azure-arm.hpc"]
    execute_command = local.sudo_execute
    inline          = ["/usr/sbin/waagent -force -deprovision+user && sync"]
  }
}
