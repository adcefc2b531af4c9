# Root for the local target: `make lab-up LAB=<lab>` with a lab whose target is local.
# scripts/lab runs it with TF_DATA_DIR and the state under build/<lab>/.

locals {
  lab_name = yamldecode(file(var.lab_file)).name
  # Which copy of the lab this is (pfslab/instance.py, at lab-up): two checkouts of the
  # kit may run the same lab side by side, so what lives outside the checkout (run
  # root, namespaces) is named after the instance, never after the lab alone.
  instance = yamldecode(file(var.lab_file)).instance
  run_root = local.instance.run_root
  # Everything the running lab writes; destroy removes it. Terraform's own state and
  # logs stay beside it in state_root until scripts/lab has checked the teardown.
  lab_root = "${var.state_root}/lab"
}

module "plan" {
  source   = "../../../terraform/modules/lab-plan"
  lab_file = var.lab_file
  target   = "local"
  paths = {
    state = "${local.lab_root}/nodes/{node}"
    run   = "${local.run_root}/{node}"
    log   = "${local.lab_root}/logs/{node}"
    # Per node, as on separate machines: each node holds only the cluster files its
    # roles need (scripts/lib/cluster-files.sh), copied from the bootstrap node's.
    cluster = "${local.lab_root}/nodes/{node}/cluster"
    mount   = "${local.lab_root}/nodes/{node}/mnt"
  }
}

module "lab" {
  source       = "../../../terraform/modules/local-lab"
  kit_root     = var.kit_root
  lab_file     = var.lab_file
  node_names   = local.instance.nodes
  state_root   = local.lab_root
  run_root     = local.run_root
  mount_path   = module.plan.lab.filesystem.mount
  bridge       = module.plan.lab.targets.local.bridge
  subnet       = module.plan.lab.network.subnet
  nodes        = module.plan.nodes
  node_configs = module.plan.node_configs
  phases       = module.plan.phases
  head_client  = module.plan.clients[0]
}

locals {
  nsrsh  = "${var.kit_root}/scripts/local/nsrsh"
  subnet = module.plan.lab.network.subnet

  # Ranks reach their nodes through nsrsh and talk over the lab bridge only. These
  # are environment variables, so job scripts keep the lab's plain mpirun line.
  launcher_env = {
    OMPI_ALLOW_RUN_AS_ROOT            = "1"
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM    = "1"
    OMPI_MCA_plm_rsh_agent            = local.nsrsh
    OMPI_MCA_plm_rsh_no_tree_spawn    = "1"
    OMPI_MCA_oob_tcp_if_include       = local.subnet
    OMPI_MCA_btl_tcp_if_include       = local.subnet
    OMPI_MCA_btl                      = "self,vader,tcp"
    OMPI_MCA_rmaps_base_oversubscribe = "1"
    RSH                               = local.nsrsh
    # nsrsh resolves a host among this lab instance's nodes only, never another
    # checkout's lab that has a node of the same name or address.
    PFSLAB_NSRSH_HOSTS = "${local.run_root}/hosts"
  }
}

output "inventory" {
  description = "The running lab, for ReFrame and the kit's scripts (written to build/<lab>/inventory.json)."
  value = merge(module.plan.inventory, {
    launcher = merge(try(module.plan.lab.launcher, {}), {
      env = merge(try(module.plan.lab.launcher.env, {}), local.launcher_env)
      rsh = local.nsrsh
      # IOzone's cluster-mode children connect back to the master at this address.
      master_address = module.lab.gateway
    })
    # Start order, as the cloud roots give it: scripts/lab starts and checks roles in it.
    phases = [for p in module.plan.phases : values(p)]
    local = {
      state_root = local.lab_root
      run_root   = local.run_root
      netns      = module.lab.netns
      bridge     = module.plan.lab.targets.local.bridge
      instance   = local.instance.id
      cgroup     = local.instance.cgroup
    }
  })
}
