# The Azure adapter: HB/HC-series VMs for the lab plan's nodes in one proximity
# placement group. InfiniBand comes with the size and the image's drivers (the lab
# plan's cloud-init puts the lab address on the IPoIB interface); local NVMe disks
# are found by model at boot. Everything the lab plan decided arrives as variables.

locals {
  prefix = "pfslab-${var.lab_name}"
  # Azure names allow no '+': beegfs-small+1 becomes beegfs-small-1.
  name = replace(local.prefix, "+", "-")
}

resource "azurerm_resource_group" "lab" {
  name     = var.resource_group
  location = var.location
  tags     = var.tags
}

resource "azurerm_virtual_network" "lab" {
  name                = local.name
  location            = var.location
  resource_group_name = azurerm_resource_group.lab.name
  address_space       = [var.vnet_subnet]
  tags                = var.tags
}

resource "azurerm_subnet" "lab" {
  #checkov:skip=CKV2_AZURE_31:The NSG is attached to every NIC (azurerm_network_interface_security_group_association), not to the subnet.
  name                 = local.name
  resource_group_name  = azurerm_resource_group.lab.name
  virtual_network_name = azurerm_virtual_network.lab.name
  address_prefixes     = [var.vnet_subnet]
}

resource "azurerm_network_security_group" "lab" {
  name                = local.name
  location            = var.location
  resource_group_name = azurerm_resource_group.lab.name
  tags                = var.tags

  # Inside the VNet Azure's default rules admit all traffic between the lab's VMs.
  security_rule {
    name                       = "ssh-from-kit"
    priority                   = 100
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_range     = "22"
    source_address_prefixes    = var.ssh_cidrs
    destination_address_prefix = "*"
  }

  # Out of the VNet only what the first boot needs (as the AWS adapter's egress rules):
  # package repositories over HTTPS and Debian mirrors over HTTP (signed packages).
  security_rule {
    name                       = "packages-out"
    priority                   = 100
    direction                  = "Outbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_ranges    = ["80", "443"]
    source_address_prefix      = "*"
    destination_address_prefix = "Internet"
  }

  # Azure's default rules let every VM reach the whole Internet; this one ends that.
  security_rule {
    name                       = "no-other-internet-out"
    priority                   = 4000
    direction                  = "Outbound"
    access                     = "Deny"
    protocol                   = "*"
    source_port_range          = "*"
    destination_port_range     = "*"
    source_address_prefix      = "*"
    destination_address_prefix = "Internet"
  }
}

resource "azurerm_proximity_placement_group" "lab" {
  count               = var.proximity_placement ? 1 : 0
  name                = local.name
  location            = var.location
  resource_group_name = azurerm_resource_group.lab.name
  tags                = var.tags
}

resource "azurerm_public_ip" "node" {
  for_each            = toset(var.public_nodes)
  name                = "${local.name}-${each.key}"
  location            = var.location
  resource_group_name = azurerm_resource_group.lab.name
  allocation_method   = "Static"
  sku                 = "Standard"
  tags                = var.tags
}

resource "azurerm_network_interface" "node" {
  #checkov:skip=CKV2_AZURE_39:The boot diagnostics this check takes for serial console access keep the serial log that the kit pins host keys from; no account has a password (disable_password_authentication), so the serial console admits no login; the public address is the login node's only, SSH from ssh_cidrs only.
  #checkov:skip=CKV_AZURE_119:A public address is how the kit reaches the lab over SSH: by default the login node's only (targets.azure.public_ip login), the others are reached through it; the NSG admits only SSH from targets.azure.ssh_cidrs. public_ip none runs the kit inside the VNet.
  for_each                       = var.nodes
  name                           = "${local.name}-${each.key}"
  location                       = var.location
  resource_group_name            = azurerm_resource_group.lab.name
  accelerated_networking_enabled = var.machines[each.key].accelerated
  tags                           = var.tags

  ip_configuration {
    name                          = "lab"
    subnet_id                     = azurerm_subnet.lab.id
    private_ip_address_allocation = "Static"
    private_ip_address            = var.machines[each.key].ethernet_address
    public_ip_address_id          = contains(var.public_nodes, each.key) ? azurerm_public_ip.node[each.key].id : null
  }
}

resource "azurerm_network_interface_security_group_association" "node" {
  for_each                  = var.nodes
  network_interface_id      = azurerm_network_interface.node[each.key].id
  network_security_group_id = azurerm_network_security_group.lab.id
}

resource "azurerm_linux_virtual_machine" "node" {
  #checkov:skip=CKV_AZURE_50:The only extension-like software is cloud-init from custom data; no VM extensions are installed.
  for_each                        = var.nodes
  name                            = "${local.name}-${each.key}"
  computer_name                   = each.key
  location                        = var.location
  resource_group_name             = azurerm_resource_group.lab.name
  size                            = var.machines[each.key].type
  admin_username                  = var.admin_user
  disable_password_authentication = true
  network_interface_ids           = [azurerm_network_interface.node[each.key].id]
  proximity_placement_group_id    = var.proximity_placement ? azurerm_proximity_placement_group.lab[0].id : null
  custom_data                     = base64gzip(var.user_data[each.key])
  source_image_id                 = var.images[var.machines[each.key].image].id
  allow_extension_operations      = false
  encryption_at_host_enabled      = var.encryption_at_host
  tags                            = var.tags

  # The serial log is where cloud-init prints the host keys the kit pins
  # (targets/azure/adapter.sh target_console); a managed storage account keeps it.
  boot_diagnostics {}

  admin_ssh_key {
    username   = var.admin_user
    public_key = var.ssh_public_key
  }

  os_disk {
    caching              = "ReadWrite"
    storage_account_type = "Premium_LRS"
    disk_size_gb         = var.machines[each.key].root_volume_gb
  }

  dynamic "source_image_reference" {
    for_each = var.images[var.machines[each.key].image].id == null ? [var.images[var.machines[each.key].image]] : []
    content {
      publisher = source_image_reference.value.publisher
      offer     = source_image_reference.value.offer
      sku       = source_image_reference.value.sku
      version   = source_image_reference.value.version
    }
  }

  lifecycle {
    precondition {
      condition     = contains(keys(var.images), var.machines[each.key].image)
      error_message = "Node ${each.key} boots the ${var.machines[each.key].image} image, which targets.azure.images does not define."
    }
  }
}
