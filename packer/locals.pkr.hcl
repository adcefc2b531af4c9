# Values derived from the variables, shared by the sources and builds.

locals {
  digest_short = substr(var.image_digest, 0, 12)
  # One timestamp per run: the AMI/VM names and image.json agree.
  built_at = timestamp()
  stamp    = formatdate("YYYYMMDDhhmm", local.built_at)

  # The file-system families (families/<fs>/family.json, one folder each), keyed by
  # family. An unknown family stops the build on a file() error whose "path" is the explanation.
  family_dir = "${var.kit_root}/families"
  families = {
    for f in fileset(local.family_dir, "*/family.json") : jsondecode(file("${local.family_dir}/${f}")).family => jsondecode(file("${local.family_dir}/${f}"))
  }

  # What the image's role installs from scripts/roles/<family> (`install COMPONENT`):
  # the server image every role that is not a client's, the client image the client's.
  components = contains(keys(local.families), var.family) ? [
    for r in local.families[var.family].roles : r.component if try(r.client, false) == (var.role == "client")
    ] : jsondecode(file(
      "family '${var.family}' is not one of ${join(", ", sort(keys(local.families)))} (families/*/family.json)"
  ))

  # The lab-plan target a builder's images serve (the node config's `target`),
  # local.target, is the folder of its image.pkr.hcl: scripts/images writes it.

  # Per builder, whether this image gets the toolchain: client images only; with
  # toolchain=auto only where the target says toolchain_auto (not qemu: it needs the
  # internet and hours). local.image (builder -> its target's facts) is written by
  # scripts/images from the targets' image.pkr.hcl.
  toolchain = {
    for builder, facts in local.image : builder => var.role == "client" && (contains(["on", "distro"], var.toolchain) || (var.toolchain == "auto" && facts.toolchain_auto))
  }
  # The fabric packages per builder: the target's, unless var.fabric overrides it.
  fabric = merge({ for builder, facts in local.image : builder => facts.fabric }, var.fabric)
  # What packer/scripts/toolchain.sh runs (PFSLAB_TOOLCHAIN): on (Spack), distro, off.
  toolchain_mode = { for builder, wanted in local.toolchain : builder => wanted ? (var.toolchain == "distro" ? "distro" : "on") : "off" }

  filesystem_settings = jsondecode(var.filesystem_settings)

  # Tags on every image and build machine; the digest names what built the image.
  base_tags = merge(var.tags, {
    "owner"          = var.owner
    "pfslab-family"  = var.family
    "pfslab-digest"  = var.image_digest
    "pfslab-built"   = local.built_at
    "pfslab-builder" = "packer"
  })

  # The shell provisioners run as root whatever the builder's login user is.
  sudo_execute = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}"
}
