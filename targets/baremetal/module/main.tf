# The bare-metal adapter for MAAS: allocate a machine per node by tags (the lab's
# hardware), give it the plan's address on the lab subnet, deploy the image with
# the plan's cloud-init user-data. Releasing the machine on destroy wipes it back
# into the pool. Existing hosts need none of this (targets/baremetal/root).

resource "maas_instance" "node" {
  for_each = var.nodes

  allocate_params {
    hostname = each.key
    tags     = var.machines[each.key].maas_tags
    zone     = var.zone
    pool     = var.pool
  }

  deploy_params {
    distro_series = var.machines[each.key].distro_series
    user_data     = var.user_data[each.key]
  }

  network_interfaces {
    name        = var.interface
    subnet_cidr = var.subnet_cidr
    ip_address  = each.value.address
  }
}
