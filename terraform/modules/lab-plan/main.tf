# The lab plan: lab file + target in; nodes, their configs and the inventory out.
# Provider-free on purpose: every decision about a lab is made here, so
# `terraform test` checks it offline and the adapters only create what it says.

locals {
  lab    = yamldecode(file(var.lab_file))
  target = coalesce(var.target, local.lab.target)
  fs     = local.lab.filesystem

  # A lab resolved by the kit (pfslab lab show) has every default filled in; a raw lab
  # file (terraform test) gets the schema's, read from labs/schema.json.
  schema_defs   = jsondecode(file("${path.module}/../../../labs/schema.json"))["$defs"]
  first_address = coalesce(var.first_address, try(local.lab.network.first_address, local.schema_defs.network.properties.first_address.default))

  # File-system families (registry/families/<fs>.json, one per file system): their
  # roles, the phases those start in, and what a cloud node runs for them at boot.
  registry_dir = "${path.module}/../../../registry/families"
  families = {
    for f in fileset(local.registry_dir, "*.json") : trimsuffix(f, ".json") => jsondecode(file("${local.registry_dir}/${f}"))
  }
  role_info = merge([for fam in values(local.families) : {
    for r in fam.roles : r.name => {
      family    = fam.family
      component = r.component
      phase     = r.phase
      boot      = join(" ", r.boot)
      client    = try(r.client, false)
    }
  }]...)
  client_roles = [for name, r in local.role_info : name if r.client]

  # Roles start in phases: a phase needs the services of the phases before it. Every
  # family's list has as many phases as the family that needs most.
  phase_count = 1 + max([for r in values(local.role_info) : r.phase]...)
  phases_by_fs = {
    for fs, fam in local.families : fs => [for p in range(local.phase_count) : [for r in fam.roles : r.name if r.phase == p]]
  }

  default_paths = {
    local = {
      state   = "/var/lib/pfslab/${local.lab.name}/nodes/{node}"
      run     = "/run/pfslab/${local.lab.name}/{node}"
      log     = "/var/lib/pfslab/${local.lab.name}/logs/{node}"
      cluster = "/var/lib/pfslab/${local.lab.name}/cluster"
      mount   = "/var/lib/pfslab/${local.lab.name}/nodes/{node}/mnt"
    }
    cloud = {
      state   = "/var/lib/pfslab"
      run     = "/run/pfslab"
      log     = "/var/log/pfslab"
      cluster = "/etc/pfslab/cluster"
      mount   = local.fs.mount
    }
  }
  path_templates = merge(
    local.default_paths[local.target == "local" ? "local" : "cloud"],
    { for k, v in var.paths : k => v if v != null },
  )

  node_list = flatten([
    for group in local.lab.node_groups : [
      for index in range(group.count) : {
        name     = "${group.name}${index}"
        group    = group.name
        index    = index
        roles    = group.roles
        hardware = try(group.hardware, {})
      }
    ]
  ])

  # OSD ids are global and consecutive, in node order: one per data drive.
  osds_per_node = [
    for n in local.node_list : contains(n.roles, "ceph-osd") ? max(1, sum(concat([0], [
      for d in try(n.hardware.drives, []) : d.count if d.use == "data"
    ]))) : 0
  ]
  data_drive = {
    for n in local.node_list : n.name => try([for d in n.hardware.drives : d if d.use == "data"][0], null)
  }

  # Existing bare-metal hosts keep the addresses they have (targets.baremetal.hosts).
  host_addresses = { for name, addr in try(local.lab.targets.baremetal.hosts, {}) : name => addr if local.target == "baremetal" }

  nodes = {
    for pos, n in local.node_list : n.name => merge(n, {
      position = pos
      address  = lookup(local.host_addresses, n.name, cidrhost(local.lab.network.subnet, local.first_address + pos))
      osd_ids  = [for k in range(local.osds_per_node[pos]) : sum(concat([0], slice(local.osds_per_node, 0, pos))) + k]
      paths    = { for k, v in local.path_templates : k => replace(v, "{node}", n.name) }
    })
  }

  role_nodes = {
    for role in distinct(flatten([for n in local.node_list : n.roles])) :
    role => [for n in local.node_list : n.name if contains(n.roles, role)]
  }

  clients = sort(flatten([for role, names in local.role_nodes : names if contains(local.client_roles, role)]))

  cluster = {
    fsid  = uuidv5("url", "https://pfslab.example/labs/${local.lab.name}")
    mons  = [for name in try(local.role_nodes["ceph-mon"], []) : { name = name, address = local.nodes[name].address }]
    first = { for role, names in local.role_nodes : role => names[0] }
    # Every node of the lab, so a role can reach its peers by name or address.
    nodes = [for n in local.node_list : { name = n.name, address = local.nodes[n.name].address, roles = n.roles }]
  }

  disks = {
    for name, n in local.nodes : name => [
      for id in n.osd_ids : local.target == "local" ? {
        osd_id     = id
        kind       = "file"
        path       = "${n.paths.state}/osd/ceph-${id}/block"
        size_bytes = floor(try(local.data_drive[name].size_gb, 8) * 1000000000 / 4096) * 4096
        } : {
        osd_id     = id
        kind       = "device"
        path       = "/dev/disk/pfslab/data${id - n.osd_ids[0]}"
        size_bytes = floor(try(local.data_drive[name].size_gb, 0) * 1000000000)
      }
    ]
  }

  node_configs = {
    for name, n in local.nodes : name => {
      lab        = local.lab.name
      target     = local.target
      node       = { name = name, group = n.group, index = n.index, address = n.address, roles = n.roles, hardware = n.hardware }
      filesystem = local.fs
      os_tuning  = try(local.lab.os_tuning, {})
      network    = local.lab.network
      cluster    = merge(local.cluster, { osd_ids = n.osd_ids })
      disks      = local.disks[name]
      paths      = n.paths
    }
  }

  # Each phase as "node/role" keys, the unit the adapters start and stop.
  phases = [
    for roles in local.phases_by_fs[local.fs.type] : {
      for pair in flatten([for role in roles : [for name in try(local.role_nodes[role], []) : { node = name, role = role }]]) :
      "${pair.node}/${pair.role}" => pair
    }
  ]

  inventory = {
    lab        = local.lab.name
    title      = local.lab.title
    target     = local.target
    filesystem = { type = local.fs.type, mount = local.fs.mount, version = try(local.fs.version, null) }
    subnet     = local.lab.network.subnet
    nodes      = [for n in local.node_list : { name = n.name, group = n.group, roles = n.roles, address = local.nodes[n.name].address }]
    clients    = local.clients
    launcher   = try(local.lab.launcher, {})
  }
}
