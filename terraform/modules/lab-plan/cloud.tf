# What a cloud or bare-metal target needs beyond the nodes: the machine each node
# group maps to (targets.<target>.groups of the lab file), the tags every resource
# carries, and each node's cloud-init user-data. Still provider-free: the adapters
# (terraform/modules/{aws,azure,baremetal}) only create what is decided here.

locals {
  tmap = try(local.lab.targets[local.target], {})
  gmap = try(local.tmap.groups, {})

  # The target's file (registry/targets/<target>.json): what a node becomes there,
  # the model of its local NVMe drives (found by model: the names the kernel gives
  # them change between boots and instance types, the model string does not), and
  # whether each node group must be mapped to a machine type.
  target_info = jsondecode(file("${path.module}/../../../registry/targets/${local.target}.json"))

  # Existing hosts and a MAAS section: settings only bare metal's schema has (no other
  # target's settings name hosts or maas), read from the lab's own target.
  maas_section   = try(local.tmap.maas, null) != null
  existing_hosts = keys(try(local.tmap.hosts, {}))

  # One shape for every target, so the adapters read the same fields.
  machines = {
    for n in local.node_list : n.name => {
      # A node the lab file gives no existing host for is the target's unlisted_machine_kind
      # (bare metal: a MAAS machine), if it has one.
      kind  = contains(local.existing_hosts, n.name) ? local.target_info.machine_kind : try(local.target_info.unlisted_machine_kind, local.target_info.machine_kind)
      group = n.group
      # Instance type (aws), VM size (azure); null on bare metal and local.
      type  = try(local.gmap[n.group].instance_type, local.gmap[n.group].vm_size, null)
      image = try(local.gmap[n.group].image, n.image)
      # One EFA interface per network card (aws): 0 means ENA only.
      efa_interfaces = try(local.gmap[n.group].efa_interfaces, 0)
      # Local NVMe drives the node's data uses: instance store (aws), local NVMe (azure).
      local_nvme     = try(local.gmap[n.group].instance_store_drives, local.gmap[n.group].local_nvme_drives, 0)
      nvme_model     = try(local.gmap[n.group].nvme_model, local.target_info.nvme_model)
      data_devices   = try(tolist(local.gmap[n.group].data_devices), [])
      root_volume_gb = try(local.gmap[n.group].root_volume_gb, local.gmap[n.group].os_disk_gb, null)
      infiniband     = try(local.gmap[n.group].infiniband, false)
      accelerated    = try(local.gmap[n.group].accelerated_networking, null)
      maas_tags      = try(tolist(local.gmap[n.group].maas_tags), [])
      distro_series  = try(local.gmap[n.group].distro_series, try(local.lab.targets.baremetal.maas.distro_series, null))
      # infiniband and vnet_subnet are settings of Azure's schema only.
      ipoib_address = try(local.gmap[n.group].infiniband, false) ? local.nodes[n.name].address : null
      # The lab address on the Ethernet side (Azure: VNet; the lab subnet is IPoIB there).
      ethernet_address = try(local.tmap.vnet_subnet, null) != null ? cidrhost(local.tmap.vnet_subnet, local.lab.network.first_address + n.position) : local.nodes[n.name].address
    }
  }

  owner = coalesce(var.owner, try(local.tmap.owner, null), "unknown")
  # The resolved lab (pfslab lab show) has the target's expiry_hours, the schema's
  # default filled in; the kit also fixes var.expiry at the first lab-up.
  expiry_hours = try(local.tmap.expiry_hours, null)
  tags = merge({
    lab    = local.lab.name
    owner  = local.owner
    expiry = var.expiry != null ? var.expiry : (local.expiry_hours == null ? null : timeadd(plantimestamp(), "${local.expiry_hours}h"))
    pfslab = "managed"
  }, var.deployment == null ? {} : { deployment = var.deployment })

  # Local data drives the lab file says a node of the group has (hardware.drives, not os).
  hw_nvme = { for g in local.lab.node_groups : g.name => sum(concat([0], [for d in try(g.hardware.drives, []) : d.count if contains(["nvme", "ssd", "hdd"], d.kind) && d.use != "os"])) }
  hw_efa  = { for g in local.lab.node_groups : g.name => sum(concat([0], [for nic in try(g.hardware.nics, []) : nic.count if nic.type == "efa"])) }
  groups  = [for g in local.lab.node_groups : g.name]

  # What makes a plan unusable for its target; the roots refuse to apply with any.
  problems = concat(
    [for g in local.groups : "targets.${local.target}.groups has no entry for node group ${g}" if local.target_info.maps_groups && !contains(keys(local.gmap), g)],
    [for g in keys(local.gmap) : "targets.${local.target}.groups.${g}: the lab has no node group ${g}" if !contains(local.groups, g)],
    [for g in local.groups : "targets.${local.target}.groups.${g}.efa_interfaces is ${try(local.gmap[g].efa_interfaces, 0)} but node group ${g} lists ${local.hw_efa[g]} EFA NIC(s)" if try(local.target_info.efa, false) && contains(keys(local.gmap), g) && local.hw_efa[g] > 0 && try(local.gmap[g].efa_interfaces, 0) != local.hw_efa[g]],
    [for g in local.groups : "targets.${local.target}.groups.${g}: ${local.hw_nvme[g]} local data drive(s) in the lab file but ${try(local.gmap[g].instance_store_drives, local.gmap[g].local_nvme_drives, 0)} local NVMe drive(s) mapped" if local.target_info.maps_groups && contains(keys(local.gmap), g) && local.hw_nvme[g] != try(local.gmap[g].instance_store_drives, local.gmap[g].local_nvme_drives, 0)],
    [for unmapped in [sort([for name, m in local.machines : name if m.kind == try(local.target_info.unlisted_machine_kind, null) && !local.maas_section])] : "targets.${local.target} has neither a hosts entry nor a maas section for node(s) ${join(", ", unmapped)}" if length(unmapped) > 0],
    [for name, u in local.user_data : "node ${name}: its user-data is ${floor(length(base64gzip(u)) * 3 / 4)} bytes gzipped, over the ${local.target_info.user_data_max_bytes} bytes target ${local.target} accepts" if try(length(base64gzip(u)) * 3 / 4 > local.target_info.user_data_max_bytes, false)],
  )

  # ---- cloud-init ---------------------------------------------------------------

  # Steps a node runs at first boot, per role (the family file's "boot"), in the start
  # phases the kit derived: only those that need no other node. Cross-node steps (the
  # cluster's keys, starting roles in phase order, waiting for health) are run
  # afterwards over SSH by scripts/remote-up.
  boot_steps = {
    for name, n in local.nodes : name => [for s in concat(["common up tuning"], flatten([
      for pair in flatten(local.layout.phases) : [
        for a in compact(split(" ", local.role_info[pair.role].boot)) : format("%s %s %s",
          local.role_info[pair.role].family,
          a == "configure-if-first" ? "configure" : a,
          local.role_info[pair.role].component,
        ) if a != "configure-if-first" || local.cluster.first[pair.role] == name
      ] if pair.node == name
    ])) : split(" ", s)]
  }

  hosts_file = join("", concat(["# pfslab hosts of lab ${local.lab.name}\n"], [for n in local.node_list : "${local.nodes[n.name].address} ${n.name}\n"]))

  # Shell a node runs at boot (each file says what it does and why), kept in
  # scripts/boot/ where the kit's lint checks it. Run as `sh -c SCRIPT NAME ARGS...`
  # from bootcmd and runcmd, so its text goes into the user-data: without the file's
  # leading comment lines (a shellcheck directive and that explanation).
  boot_dir     = "${path.module}/../../../scripts/boot"
  disk_script  = replace(file("${local.boot_dir}/pfslab-disks.sh"), "/^(#.*\n)+/", "")
  ipoib_script = replace(file("${local.boot_dir}/pfslab-ipoib.sh"), "/^(#.*\n)+/", "")

  prefix_len = split("/", local.lab.network.subnet)[1]
  node_env   = ["env", "PFSLAB_NODE_CONFIG=/etc/pfslab/node.json", "PFSLAB_ROOT=${var.node_kit_root}"]

  disk_cmd = {
    for name, m in local.machines : name => length(m.data_devices) > 0 ? concat(["sh", "-c", local.disk_script, "pfslab-disks", "paths"], m.data_devices) : (
      m.local_nvme > 0 ? ["sh", "-c", local.disk_script, "pfslab-disks", "model", m.nvme_model, tostring(m.local_nvme)] : []
    )
  }
  ipoib_cmd = {
    for name, m in local.machines : name => m.ipoib_address == null ? [] : ["sh", "-c", local.ipoib_script, "pfslab-ipoib", "${m.ipoib_address}/${local.prefix_len}"]
  }

  bootcmd = {
    for name, m in local.machines : name => concat(
      length(local.disk_cmd[name]) > 0 ? [local.disk_cmd[name]] : [],
      length(local.ipoib_cmd[name]) > 0 ? [concat(local.ipoib_cmd[name], ["soft"])] : [],
    )
  }

  cloud_configs = {
    for name, n in local.nodes : name => merge(
      {
        hostname          = name
        preserve_hostname = false
        # /etc/hosts gets the lab's nodes once (runcmd); cloud-init must not rewrite it.
        manage_etc_hosts = false
        # The kit logs in as root with the lab's key: roles need root, and the lab is disposable.
        disable_root = false
        # Keys only: no password logins, whatever the image's sshd_config says.
        ssh_pwauth = false
        write_files = [
          { path = "/etc/pfslab/node.json", owner = "root:root", permissions = "0644", content = jsonencode(local.node_configs[name]) },
          { path = "/etc/pfslab/inventory.json", owner = "root:root", permissions = "0644", content = jsonencode(local.inventory) },
          { path = "/etc/pfslab/hosts", owner = "root:root", permissions = "0644", content = local.hosts_file },
          { path = "/etc/profile.d/pfslab.sh", owner = "root:root", permissions = "0644", content = "export PFSLAB_NODE_CONFIG=/etc/pfslab/node.json PFSLAB_ROOT=${var.node_kit_root}\n" },
        ]
        # A failing step fails cloud-init (status error), which scripts/remote-up reports.
        runcmd = concat(
          ["set -e"],
          [["sh", "-c", "grep -qxF '# pfslab hosts of lab ${local.lab.name}' /etc/hosts || cat /etc/pfslab/hosts >>/etc/hosts"]],
          length(local.ipoib_cmd[name]) > 0 ? [concat(local.ipoib_cmd[name], ["hard"])] : [],
          [for s in local.boot_steps[name] : concat(local.node_env, ["${var.node_kit_root}/scripts/roles/${s[0]}", s[1], s[2]])],
        )
      },
      { for k, v in { ssh_authorized_keys = [var.ssh_public_key] } : k => v if var.ssh_public_key != null },
      # Every boot (not only the first): /dev and IPoIB addresses do not survive a reboot.
      { for k, v in { bootcmd = local.bootcmd[name] } : k => v if length(local.bootcmd[name]) > 0 },
    )
  }

  user_data = { for name, c in local.cloud_configs : name => "#cloud-config\n${yamlencode(c)}" }

  # The same first boot as one POSIX shell script, for existing hosts that no
  # provider boots (targets.baremetal.hosts): scripts/remote-up runs it over SSH.
  boot_scripts = {
    for name, c in local.cloud_configs : name => join("\n", concat(
      ["#!/bin/sh", "# First boot of node ${name} of lab ${local.lab.name} (what its cloud-init user-data does).", "set -e", "mkdir -p /etc/pfslab"],
      [for f in c.write_files : "cat >${f.path} <<'PFSLAB_EOF'\n${trimsuffix(f.content, "\n")}\nPFSLAB_EOF\nchmod ${f.permissions} ${f.path}"],
      [for cmd in local.bootcmd[name] : join(" ", [for a in cmd : "'${replace(a, "'", "'\\''")}'"])],
      [for cmd in slice(c.runcmd, 1, length(c.runcmd)) : join(" ", [for a in cmd : "'${replace(a, "'", "'\\''")}'"])],
      [""],
    ))
  }
}
