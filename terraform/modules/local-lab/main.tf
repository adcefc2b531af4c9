# The local adapter: a lab on this host, nodes as network namespaces on a bridge.
# It needs no provider: terraform_data resources run the kit's scripts, and every
# resource's destroy provisioner undoes exactly what its create did.

locals {
  gateway    = cidrhost(var.subnet, 1)
  prefix_len = split("/", var.subnet)[1]
  # Derived once, by pfslab/names.py (the resolved lab's instance.nodes).
  netns = { for name, n in var.nodes : name => var.node_names[name].netns }
  config_path = {
    for name, n in var.nodes : name => "${var.state_root}/nodes/${name}/node.json"
  }

  # A role's script in the kit: its family's folder (families/<fs>/role, the family
  # named by the role's prefix), else the kit's own scripts/roles/<name> (common, slurm).
  family_scripts = {
    for f in fileset("${var.kit_root}/families", "*/family.json") :
    jsondecode(file("${var.kit_root}/families/${f}")).family => "families/${dirname(f)}/role"
  }

  # What a phase's provisioners need, resolved per "node/role" key.
  role_calls = {
    for key, pair in merge(var.phases...) : key => {
      kit       = var.kit_root
      netns     = local.netns[pair.node]
      config    = local.config_path[pair.node]
      script    = lookup(local.family_scripts, split("-", pair.role)[0], "scripts/roles/${split("-", pair.role)[0]}")
      component = join("-", slice(split("-", pair.role), 1, length(split("-", pair.role))))
      digest    = sha1(var.node_configs[pair.node])
      # The bootstrap node's cluster files, which every other node takes its share of.
      cluster_source = local.cluster_source
    }
  }

  # The bootstrap node is the first node of the first phase, as for remote labs
  # (scripts/lib/remote.sh); it makes the cluster's keys and config.
  bootstrap      = values(var.phases[0])[0].node
  cluster_source = var.nodes[local.bootstrap].paths.cluster
}

resource "terraform_data" "lab_dirs" {
  input = {
    kit   = var.kit_root
    state = var.state_root
    run   = var.run_root
    mount = var.mount_path
  }

  provisioner "local-exec" {
    command = "'${self.input.kit}/scripts/local/prepare' '${self.input.state}' '${self.input.run}' '${self.input.mount}'"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "'${self.input.kit}/scripts/local/cleanup' '${self.input.state}' '${self.input.run}' '${self.input.mount}'"
  }
}

# The lab as resolved, copied into the run root before the bridge exists: another
# checkout's lab-up reads it there to see which bridge, subnet and mount path are
# taken (pfslab lab collisions). Rewritten when the lab changes; the run root goes
# with lab_dirs.
resource "terraform_data" "record" {
  depends_on       = [terraform_data.lab_dirs]
  triggers_replace = [filesha1(var.lab_file)]

  provisioner "local-exec" {
    command = "cp '${var.lab_file}' '${var.run_root}/lab.json.new' && mv '${var.run_root}/lab.json.new' '${var.run_root}/lab.json'"
  }
}

resource "terraform_data" "bridge" {
  depends_on = [terraform_data.record]
  input = {
    kit    = var.kit_root
    bridge = var.bridge
  }
  triggers_replace = [var.bridge, var.subnet]

  provisioner "local-exec" {
    command = "'${self.input.kit}/scripts/local/netns' bridge-up '${self.input.bridge}' '${local.gateway}/${local.prefix_len}'"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "'${self.input.kit}/scripts/local/netns' bridge-down '${self.input.bridge}'"
  }
}

resource "terraform_data" "node" {
  for_each   = var.nodes
  depends_on = [terraform_data.bridge]

  input = {
    kit   = var.kit_root
    netns = local.netns[each.key]
    veth  = var.node_names[each.key].veth
  }
  triggers_replace = [each.value.address, var.bridge, var.subnet]

  provisioner "local-exec" {
    command = "'${self.input.kit}/scripts/local/netns' node-up '${self.input.netns}' '${self.input.veth}' '${var.bridge}' '${each.value.address}/${local.prefix_len}' '${local.gateway}'"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "'${self.input.kit}/scripts/local/netns' node-down '${self.input.netns}' '${self.input.veth}'"
  }
}

# The node's config (what its roles read) and its record for nsrsh: rewritten when
# the lab file changes, without touching the node's namespace.
resource "terraform_data" "node_config" {
  for_each   = var.nodes
  depends_on = [terraform_data.node]

  input = {
    config = local.config_path[each.key]
    record = "${var.run_root}/hosts/${each.key}"
  }
  triggers_replace = [var.node_configs[each.key], var.mount_path]

  provisioner "local-exec" {
    # Through the environment, so the document is not echoed into Terraform's log.
    # The kit from the variable, not the input: a lab made before keeps its state as is.
    environment = {
      NODE_CONFIG = var.node_configs[each.key]
      NODE_RECORD = "${each.value.address} ${each.key} ${local.netns[each.key]} ${each.value.paths.mount} ${var.mount_path}"
    }
    command = "'${var.kit_root}/scripts/local/node-config' '${self.input.config}' '${self.input.record}'"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "rm -f '${self.input.record}'"
  }
}

# Five phases, each waiting for the one before: on destroy they stop in reverse.
module "phase0" {
  source     = "./phase"
  depends_on = [terraform_data.node_config]
  calls      = { for k, v in var.phases[0] : k => local.role_calls[k] }
}

module "phase1" {
  source     = "./phase"
  depends_on = [module.phase0]
  calls      = { for k, v in var.phases[1] : k => local.role_calls[k] }
}

module "phase2" {
  source     = "./phase"
  depends_on = [module.phase1]
  calls      = { for k, v in var.phases[2] : k => local.role_calls[k] }
}

module "phase3" {
  source     = "./phase"
  depends_on = [module.phase2]
  calls      = { for k, v in var.phases[3] : k => local.role_calls[k] }
}

module "phase4" {
  source     = "./phase"
  depends_on = [module.phase3]
  calls      = { for k, v in var.phases[4] : k => local.role_calls[k] }
}

# The host plays the login node: it sees the file system at the common path (through
# the first client's mount), so job scripts can prepare and clean benchmark
# directories. Ranks still use their own node's client: nsrsh binds it over this one.
resource "terraform_data" "head_mount" {
  depends_on = [module.phase4]
  input = {
    kit    = var.kit_root
    source = var.nodes[var.head_client].paths.mount
    target = var.mount_path
  }

  provisioner "local-exec" {
    command = "'${self.input.kit}/scripts/local/bind-mount' '${self.input.source}' '${self.input.target}'"
  }

  provisioner "local-exec" {
    when = destroy
    # A lab made by a kit older than this input (no "kit") still comes down, lazily.
    command = lookup(self.input, "kit", "") != "" ? "'${lookup(self.input, "kit", "")}/scripts/local/unmount' '${self.input.target}'" : "umount -l '${self.input.target}'"
  }
}
