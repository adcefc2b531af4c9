# Plugins for current Packer (>= 1.10: `packer init packer/`). Debian's Packer 1.6.6
# bundles these builders and rejects this block, so it lives alone in this file and
# scripts/images gives 1.6.6 every other *.pkr.hcl file.
packer {
  required_version = ">= 1.10.0"
  required_plugins {
    amazon = {
      source  = "github.com/hashicorp/amazon"
      version = "= 1.8.0"
    }
    azure = {
      source  = "github.com/hashicorp/azure"
      version = "= 2.5.0"
    }
    qemu = {
      source  = "github.com/hashicorp/qemu"
      version = "= 1.1.5"
    }
  }
}
