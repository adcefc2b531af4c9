# What a cloud or bare-metal target needs beyond the nodes: the machine each node
# group maps to (targets.<target>.groups of the lab file), the tags every resource
# carries, and each node's cloud-init user-data. Still provider-free: the adapters
# (targets/<target>/module) only create what is decided here.

locals {
  tmap = try(local.lab.targets[local.target], {})
  gmap = try(local.tmap.groups, {})

  # The target's file (targets/<target>/target.json): what a node becomes there,
  # the model of its local NVMe drives (found by model: the names the kernel gives
  # them change between boots and instance types, the model string does not),
  # whether each node group must be mapped to a machine type, and which of its
  # settings hold what the plan reads (group_fields, *_setting): a target's own
  # names live in its file, so a new target needs no edit here.
  target_info = jsondecode(file("${path.module}/../../../targets/${local.target}/target.json"))
  fields      = try(local.target_info.group_fields, {})

  # Existing hosts (hosts_setting) and a section that provisions the others
  # (unlisted_setting; bare metal: hosts and maas), read from the lab's own target.
  unlisted_section = try(local.tmap[local.target_info.unlisted_setting], null)
  existing_hosts   = keys(try(local.tmap[local.target_info.hosts_setting], {}))

  # Per node group, what the plan reads from targets.<target>.groups.<group>: a field
  # the target does not name (or the group leaves out) takes its default. A group
  # without distro_series takes the unlisted section's (bare metal: maas.distro_series).
  group_settings = {
    for g in local.lab.node_groups : g.name => {
      for field, setting in local.fields : field => try(local.gmap[g.name][setting], local.unlisted_section[setting], null)
    }
  }

  # One shape for every target, so the adapters read the same fields.
  machines = {
    for n in local.node_list : n.name => {
      # A node the lab file gives no existing host for is the target's unlisted_machine_kind
      # (bare metal: a MAAS machine), if it has one.
      kind  = contains(local.existing_hosts, n.name) ? local.target_info.machine_kind : try(local.target_info.unlisted_machine_kind, local.target_info.machine_kind)
      group = n.group
      # Instance type (aws), VM size (azure); null on bare metal and local.
      type  = try(coalesce(local.group_settings[n.group].type), null)
      image = try(local.gmap[n.group].image, n.image)
      # One EFA interface per network card (aws): 0 means ENA only.
      efa_interfaces = try(coalesce(local.group_settings[n.group].efa_interfaces), 0)
      # Local NVMe drives the node's data uses: instance store (aws), local NVMe (azure).
      local_nvme     = try(coalesce(local.group_settings[n.group].local_nvme), 0)
      nvme_model     = try(local.gmap[n.group].nvme_model, local.target_info.nvme_model)
      data_devices   = try(tolist(coalesce(local.group_settings[n.group].data_devices)), [])
      root_volume_gb = try(coalesce(local.group_settings[n.group].root_volume_gb), null)
      infiniband     = try(coalesce(local.group_settings[n.group].infiniband), false)
      accelerated    = try(local.group_settings[n.group].accelerated, null)
      maas_tags      = try(tolist(coalesce(local.group_settings[n.group].maas_tags)), [])
      distro_series  = try(local.group_settings[n.group].distro_series, null)
      # Over InfiniBand (azure) the lab subnet is IPoIB.
      ipoib_address = try(coalesce(local.group_settings[n.group].infiniband), false) ? local.nodes[n.name].address : null
      # The lab address on the Ethernet side (ethernet_subnet_setting; Azure: the VNet,
      # the lab subnet is IPoIB there).
      ethernet_address = try(local.tmap[local.target_info.ethernet_subnet_setting], null) != null ? cidrhost(local.tmap[local.target_info.ethernet_subnet_setting], local.lab.network.first_address + n.position) : local.nodes[n.name].address
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
    [for g in local.groups : "targets.${local.target}.groups.${g}.${local.fields.efa_interfaces} is ${try(coalesce(local.group_settings[g].efa_interfaces), 0)} but node group ${g} lists ${local.hw_efa[g]} EFA NIC(s)" if try(local.target_info.efa, false) && contains(keys(local.gmap), g) && local.hw_efa[g] > 0 && try(coalesce(local.group_settings[g].efa_interfaces), 0) != local.hw_efa[g]],
    [for g in local.groups : "targets.${local.target}.groups.${g}: ${local.hw_nvme[g]} local data drive(s) in the lab file but ${try(coalesce(local.group_settings[g].local_nvme), 0)} local NVMe drive(s) mapped" if local.target_info.maps_groups && contains(keys(local.gmap), g) && local.hw_nvme[g] != try(coalesce(local.group_settings[g].local_nvme), 0)],
    [for unmapped in [sort([for name, m in local.machines : name if m.kind == try(local.target_info.unlisted_machine_kind, null) && local.unlisted_section == null])] : "targets.${local.target} has neither a ${local.target_info.hosts_setting} entry nor a ${local.target_info.unlisted_setting} section for node(s) ${join(", ", unmapped)}" if length(unmapped) > 0],
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
