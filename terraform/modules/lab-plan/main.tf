# The lab plan: the resolved lab in; the nodes' paths, configs, user-data and the
# inventory out. Provider-free on purpose: every decision about a lab is made here or
# by the kit before (pfslab/layout.py: node names, addresses, OSD ids, clients, start
# phases, read from the lab's `derived` part), so `terraform test` checks it offline
# and the adapters only create what it says.

locals {
  lab    = jsondecode(file(var.lab_file))
  layout = local.lab.derived
  target = local.layout.target
  fs     = local.lab.filesystem

  # File-system families (families/<fs>/family.json, one folder per file system): their
  # roles, the phases those start in, and what a cloud node runs for them at boot.
  families_dir = "${path.module}/../../../families"
  families = {
    for f in fileset(local.families_dir, "*/family.json") : dirname(f) => jsondecode(file("${local.families_dir}/${f}"))
  }
  # Schedulers (registry/schedulers/<type>.json): their roles, which pfslab/layout.py
  # attaches to the login node and the clients (scripts/roles/<type>), and what a cloud
  # node runs for them at first boot (Slurm: install only; the MUNGE key comes with the
  # cluster files after it).
  scheduler_dir = "${path.module}/../../../registry/schedulers"
  schedulers = {
    for f in fileset(local.scheduler_dir, "*.json") : trimsuffix(f, ".json") => jsondecode(file("${local.scheduler_dir}/${f}"))
  }
  scheduler_role_names = flatten([for s in values(local.schedulers) : [for r in s.roles : r.name]])
  # What a cloud node's first boot runs per role: the role script, its component, the steps.
  role_info = merge(concat([for s in values(local.schedulers) : {
    for r in s.roles : r.name => { family = s.scheduler, component = r.component, boot = join(" ", r.boot) }
    }], [for fam in values(local.families) : {
    for r in fam.roles : r.name => { family = fam.family, component = r.component, boot = join(" ", r.boot) }
  }])...)

  default_paths = {
    local = {
      state   = "/var/lib/pfslab/${local.lab.name}/nodes/{node}"
      run     = "/run/pfslab/${local.lab.name}/{node}"
      log     = "/var/lib/pfslab/${local.lab.name}/logs/{node}"
      cluster = "/var/lib/pfslab/${local.lab.name}/nodes/{node}/cluster"
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
    local.default_paths[local.target_info.namespaces ? "local" : "cloud"],
    { for k, v in var.paths : k => v if v != null },
  )

  node_list = local.layout.nodes

  data_drive = {
    for n in local.node_list : n.name => try([for d in n.hardware.drives : d if d.use == "data"][0], null)
  }

  nodes = {
    for n in local.node_list : n.name => merge(n, {
      paths = { for k, v in local.path_templates : k => replace(v, "{node}", n.name) }
    })
  }

  role_nodes = {
    for role in distinct(flatten([for n in local.node_list : n.roles])) :
    role => [for n in local.node_list : n.name if contains(n.roles, role)]
  }

  clients = tolist(local.layout.clients)

  cluster = {
    fsid  = uuidv5("url", "https://pfslab.example/labs/${local.lab.name}")
    mons  = [for name in try(local.role_nodes["ceph-mon"], []) : { name = name, address = local.nodes[name].address }]
    first = { for role, names in local.role_nodes : role => names[0] }
    # Every node of the lab, so a role can reach its peers by name or address.
    nodes = [for n in local.node_list : { name = n.name, address = local.nodes[n.name].address, roles = n.roles }]
  }

  disks = {
    for name, n in local.nodes : name => [
      for id in n.osd_ids : local.target_info.namespaces ? {
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

  # Kernel tuning (sysctl, transparent_hugepages, numa_balancing) goes only to the nodes
  # of the roles the lab names (os_tuning.roles; seed 002 tunes "the metadata and storage
  # servers"); every other node gets an empty sysctl map and keeps its kernel's own
  # settings. The rest of os_tuning (drop_caches) is every node's. Values go through JSON:
  # os_tuning's attributes have different types.
  os_tuning = try(local.lab.os_tuning, {})
  tuned = {
    for name, n in local.nodes : name => length([for r in n.roles : r if contains(try(local.os_tuning.roles, []), r)]) > 0
  }
  node_tuning = {
    for name in keys(local.nodes) : name => {
      for k, v in local.os_tuning : k => jsondecode(k == "sysctl" && !local.tuned[name] ? "{}" : jsonencode(v))
      if k != "roles" && (local.tuned[name] || !contains(["transparent_hugepages", "numa_balancing"], k))
    }
  }

  node_configs = {
    for name, n in local.nodes : name => merge({
      # machine_kind: what the node is (targets/<target>/target.json, per node as the
      # adapters make it); the roles decide by it, never by the target's name.
      lab          = local.lab.name
      target       = local.target
      machine_kind = local.machines[name].kind
      node         = { name = name, group = n.group, index = n.index, address = n.address, roles = n.roles, hardware = n.hardware }
      filesystem   = local.fs
      os_tuning    = local.node_tuning[name]
      network      = local.lab.network
      cluster      = merge(local.cluster, { osd_ids = n.osd_ids })
      disks        = local.disks[name]
      paths        = n.paths
      # Devices the lab lets the roles erase although they hold something; absent when none.
      }, { for k, v in { wipe_devices = n.wipe_devices } : k => v if length(v) > 0 },
      # The lab's scheduler (scripts/roles/slurm) on the nodes that play its roles; absent otherwise.
    { for k, v in { scheduler = try(local.lab.scheduler, null) } : k => v if v != null && length(setintersection(n.roles, local.scheduler_role_names)) > 0 })
  }

  # Each phase as "node/role" keys, the unit the adapters start and stop.
  phases = [for pairs in local.layout.phases : { for pair in pairs : "${pair.node}/${pair.role}" => pair }]

  inventory = {
    lab        = local.lab.name
    title      = local.lab.title
    target     = local.target
    filesystem = { type = local.fs.type, mount = local.fs.mount, version = try(local.fs.version, null) }
    subnet     = local.lab.network.subnet
    nodes = [for n in local.node_list : {
      name     = n.name, group = n.group, roles = n.roles, address = local.nodes[n.name].address,
      ssh_jump = lookup(local.layout.ssh_jump, n.name, null)
    }]
    clients = local.clients
    login   = local.layout.login
    # Through JSON: the two launchers have different shapes.
    launcher = jsondecode(local.target_info.namespaces ? jsonencode(try(local.lab.launcher, {})) : jsonencode(local.remote_launcher))
  }

  # A remote lab's benchmarks are launched on its login node (registry/launcher.json
  # says how and why). IOzone's children find the master by its host name, as in the
  # seeds' runs (the first boot puts every node's name in /etc/hosts): no -+h.
  launcher_registry = jsondecode(file("${path.module}/../../../registry/launcher.json")).remote
  remote_launcher = merge(try(local.lab.launcher, {}), {
    env = merge(try(local.lab.launcher.env, {}), {
      for k, v in local.launcher_registry.env : k => replace(replace(v, "{kit}", var.node_kit_root), "{subnet}", local.lab.network.subnet)
    })
    rsh = replace(local.launcher_registry.rsh, "{kit}", var.node_kit_root)
  })
}
