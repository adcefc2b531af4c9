# The azure target's image source and variables (scripts/images assembles them with
# packer/, whose one build lists this source: packer/README.md).

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

  managed_image_name                = "pfslab-${var.role}"
  azure_tags                        = merge(local.base_tags, { "pfslab-role" = var.role })
  managed_image_resource_group_name = var.azure_resource_group
}

# What the shared build steps take from this target (local.image.<builder> in the
# assembled templates): its fabric packages (none: the HPC image brings its InfiniBand stack) and whether
# toolchain=auto gives its client images the Spack toolchain (on client images (toolchain=auto)).
locals {
  target_azure = {
    fabric         = "none"
    toolchain_auto = true
  }
}

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

