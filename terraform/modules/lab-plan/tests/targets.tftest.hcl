# Every shipped lab planned for every target it maps (tests/matrix), and the cloud
# mappings checked in detail on the cloud reproductions. Offline: no provider.

variables {
  # Written by scripts/check-terraform (`pfslab lab export`).
  resolved_dir = "../../../build/terraform-test"
}

run "every_lab_and_target_plans_without_problems" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  assert {
    condition     = length(output.pairs) >= 6 && contains(output.pairs, "aws-beegfs-medium/aws") && contains(output.pairs, "azure-beegfs-medium/azure") && contains(output.pairs, "aws-cephfs/aws") && contains(output.pairs, "aws-nfs/aws") && contains(output.pairs, "local/local")
    error_message = "Expected every shipped lab x target, got ${jsonencode(output.pairs)}."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : length(p.problems) == 0 if p.mapped])
    error_message = "Plans with problems: ${jsonencode({ for k, p in output.plans : k => p.problems if p.mapped && length(p.problems) > 0 })}."
  }

  # A seed lab whose target has no mapping yet (no hosts, no MAAS section) still
  # plans, and every problem names the missing part of targets.<target>.
  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for msg in p.problems : strcontains(msg, "targets.${p.target}")] if !p.mapped]))
    error_message = "Unmapped targets must be reported as such."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : length(distinct(p.addresses)) == p.nodes])
    error_message = "Every node of a lab needs its own address."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for name, u in p.user_data : startswith(u, "#cloud-config\n") && strcontains(u, "/etc/pfslab/node.json") && strcontains(u, "/etc/pfslab/inventory.json")]]))
    error_message = "Every node's user-data is a #cloud-config that writes its node config and the inventory."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for name, u in p.user_data : strcontains(u, "\"ssh_pwauth\": false")]]))
    error_message = "Every node's user-data turns password logins off (ssh_pwauth: false)."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for name, s in p.boot_steps : jsonencode(s[0]) == jsonencode(["common", "up", "tuning"])]]))
    error_message = "Every node's first boot starts with common up tuning."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for name, c in p.configs : length(c.cluster.nodes) == p.nodes && c.node.name == name]]))
    error_message = "Every node config lists the whole cluster (cluster.nodes) and names its own node."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : p.target == "local" || (p.tags.expiry == "2026-01-01T08:00:00Z" && contains(keys(p.tags), "owner") && p.tags.pfslab == "managed")])
    error_message = "Cloud plans carry lab, owner, expiry and pfslab tags."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for name, u in p.user_data : length(base64gzip(u)) * 3 / 4 <= 16384]]))
    error_message = "Every user-data fits EC2's 16 KiB once gzipped."
  }
}

run "aws_beegfs_medium_maps_efa_and_instance_store" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  assert {
    condition     = output.plans["aws-beegfs-medium/aws"].nodes == 39 && output.plans["aws-beegfs-medium/aws"].machines["ss4"].type == "i3en.24xlarge" && output.plans["aws-beegfs-medium/aws"].machines["cli31"].type == "c5n.18xlarge"
    error_message = "1 mgmt, 1 mds, 5 ss (i3en.24xlarge) and 32 clients (c5n.18xlarge)."
  }

  assert {
    condition     = output.plans["aws-beegfs-medium/aws"].machines["mds0"].efa_interfaces == 1 && output.plans["aws-beegfs-medium/aws"].machines["mgmt0"].efa_interfaces == 0 && output.plans["aws-beegfs-medium/aws"].machines["ss0"].local_nvme == 8
    error_message = "One EFA interface per network card of i3en/c5n, none on the management node; 8 instance-store drives per server."
  }

  assert {
    condition     = output.plans["aws-beegfs-medium/aws"].machines["cli0"].image == "client" && output.plans["aws-beegfs-medium/aws"].machines["mds0"].image == "server"
    error_message = "Client groups boot the client image, the others the server image."
  }

  assert {
    condition     = strcontains(output.plans["aws-beegfs-medium/aws"].user_data["ss0"], "Amazon EC2 NVMe Instance Storage") && !strcontains(output.plans["aws-beegfs-medium/aws"].user_data["cli0"], "pfslab-disks")
    error_message = "Storage servers link their instance-store drives at boot; clients have none."
  }

  assert {
    condition     = strcontains(output.plans["aws-beegfs-medium/aws"].user_data["ss0"], "mkdir -p /dev/disk/pfslab") && !strcontains(output.plans["aws-beegfs-medium/aws"].user_data["ss0"], "shellcheck")
    error_message = "The user-data carries scripts/boot/pfslab-disks.sh without its header comments."
  }

  assert {
    condition     = jsonencode(output.plans["aws-beegfs-medium/aws"].boot_steps["mds0"]) == jsonencode([["common", "up", "tuning"], ["beegfs", "install", "meta"], ["beegfs", "configure", "meta"], ["beegfs", "install", "storage"], ["beegfs", "configure", "storage"]])
    error_message = "The metadata server installs and configures its meta and storage targets at boot, in phase order; nothing is started."
  }

  assert {
    condition     = output.plans["aws-beegfs-medium/aws"].configs["cli0"].node.hardware.model == "AWS c5n.18xlarge" && output.plans["aws-beegfs-medium/aws"].configs["cli0"].paths.mount == "/mnt/beegfs"
    error_message = "A node config carries its group's hardware and the lab's mount."
  }
}

run "only_the_first_monitor_bootstraps_ceph_at_boot" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  assert {
    condition     = jsonencode(output.plans["aws-cephfs/aws"].boot_steps["mon0"]) == jsonencode([["common", "up", "tuning"], ["ceph", "install", "mon"], ["ceph", "configure", "mon"], ["ceph", "install", "mgr"], ["ceph", "install", "mds"]])
    error_message = "mon0 creates the cluster's keys and monitor map at boot."
  }

  assert {
    condition     = jsonencode(output.plans["aws-cephfs/aws"].boot_steps["mon1"]) == jsonencode([["common", "up", "tuning"], ["ceph", "install", "mon"], ["ceph", "install", "mgr"], ["ceph", "install", "mds"]])
    error_message = "Other monitors wait for the kit to bring the cluster's files."
  }

  assert {
    condition     = length(output.plans["aws-cephfs/aws"].configs["osd6"].disks) == 12 && output.plans["aws-cephfs/aws"].configs["osd6"].disks[11].osd_id == 83 && output.plans["aws-cephfs/aws"].configs["osd6"].disks[11].path == "/dev/disk/pfslab/data11"
    error_message = "84 OSDs, 12 per d3en node, on the linked drives."
  }
}

run "azure_puts_the_lab_subnet_on_infiniband" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  assert {
    condition     = output.plans["azure-beegfs-medium/azure"].machines["ss0"].ipoib_address == "10.31.0.12" && output.plans["azure-beegfs-medium/azure"].machines["ss0"].ethernet_address == "10.30.0.12"
    error_message = "The lab address goes on IPoIB; the VNet address takes the same host number."
  }

  assert {
    condition     = strcontains(output.plans["azure-beegfs-medium/azure"].user_data["cli0"], "pfslab-ipoib") && strcontains(output.plans["azure-beegfs-medium/azure"].user_data["ss0"], "Microsoft NVMe Direct Disk")
    error_message = "Every Azure node sets its IPoIB address at boot; servers link their local NVMe."
  }

  assert {
    condition     = strcontains(output.plans["azure-beegfs-medium/azure"].user_data["cli0"], "ip addr replace") && !strcontains(output.plans["azure-beegfs-medium/azure"].user_data["cli0"], "shellcheck")
    error_message = "The user-data carries scripts/boot/pfslab-ipoib.sh without its header comments."
  }
}

run "existing_hosts_keep_their_addresses" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  assert {
    condition     = output.plans["baremetal-cephfs-hosts/baremetal"].configs["osd1"].node.address == "192.0.2.12" && output.plans["baremetal-cephfs-hosts/baremetal"].machines["osd1"].kind == "host"
    error_message = "targets.baremetal.hosts gives the nodes' addresses."
  }

  assert {
    condition     = strcontains(output.plans["baremetal-cephfs-hosts/baremetal"].user_data["osd0"], "/dev/disk/by-id/nvme-pfslab-example-1")
    error_message = "Explicit data devices are linked at boot."
  }
}

run "only_the_login_node_is_public_by_default" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  # No shipped cloud lab states public_ip: each gets the default, one way in; existing
  # hosts behind a login node (login_address) are reached the same way.
  assert {
    condition     = alltrue([for k, p in output.plans : jsonencode(p.public) == jsonencode(contains(["aws", "azure"], p.target) || p.behind_login ? [p.inventory.login] : [])])
    error_message = "Only the login node of a cloud lab, or of hosts behind a login node, gets a public address: ${jsonencode({ for k, p in output.plans : k => p.public })}."
  }

  assert {
    condition     = alltrue(flatten([for k, p in output.plans : [for n in p.inventory.nodes : n.ssh_jump == ((contains(["aws", "azure"], p.target) || p.behind_login) && n.name != p.inventory.login ? p.inventory.login : null)]]))
    error_message = "Every other node of a cloud lab, or of hosts behind a login node, is reached through the login node (ssh_jump); nodes elsewhere directly."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : contains(p.inventory.clients, p.inventory.login)])
    error_message = "The login node is the first client by default."
  }
}

run "remote_labs_launch_from_their_login_node" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  # mpirun's daemons and IOzone's children are started over the lab's own ssh wrapper,
  # only from the login node, and talk over the lab's subnet; IOzone's children find the
  # master by its name, as in the seeds' runs. The local lab keeps its own launcher.
  assert {
    condition     = alltrue([for k, p in output.plans : p.inventory.launcher.env.OMPI_MCA_plm_rsh_agent == "/opt/pfslab/scripts/lab-rsh" && p.inventory.launcher.env.RSH == "/opt/pfslab/scripts/lab-rsh" && p.inventory.launcher.env.OMPI_MCA_plm_rsh_no_tree_spawn == "1" && p.inventory.launcher.env.OMPI_MCA_btl_tcp_if_include == p.subnet && !can(p.inventory.launcher.master_address) if p.target != "local"])
    error_message = "Every remote plan's launcher must start ranks with scripts/lab-rsh from its login node over the lab subnet."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : startswith(p.inventory.launcher.mpirun, "mpirun") if p.target != "local" && can(p.inventory.launcher.mpirun)])
    error_message = "A remote plan keeps the lab's own mpirun line."
  }

  assert {
    condition     = alltrue([for k, p in output.plans : !can(p.inventory.launcher.env.OMPI_MCA_plm_rsh_agent) if p.target == "local"])
    error_message = "The local plan's launcher comes from the local adapter (nsrsh), not the remote one."
  }
}

run "kernel_tuning_goes_to_the_roles_the_lab_names" {
  command = plan

  module {
    source = "./tests/matrix"
  }

  # Seed 002: "the following tuning options are in place on the metadata and storage
  # servers" (os_tuning.roles). Its clients and management server get no kernel setting.
  assert {
    condition = alltrue(flatten([for k in ["beegfs-small/baremetal", "beegfs-medium/baremetal", "aws-beegfs-medium/aws"] : [
      for name in ["mds0", "ss0"] : output.plans[k].configs[name].os_tuning.sysctl["vm.dirty_ratio"] == 20 && output.plans[k].configs[name].os_tuning.transparent_hugepages == "never" && output.plans[k].configs[name].os_tuning.numa_balancing == false
    ]]))
    error_message = "The metadata and storage servers of the BeeGFS labs get the seed's sysctls, THP never and NUMA balancing off."
  }

  assert {
    condition = alltrue(flatten([for k in ["beegfs-small/baremetal", "beegfs-medium/baremetal", "aws-beegfs-medium/aws"] : [
      for name in ["cli0", "cli31", "mgmt0"] : length(output.plans[k].configs[name].os_tuning.sysctl) == 0 && !can(output.plans[k].configs[name].os_tuning.transparent_hugepages) && !can(output.plans[k].configs[name].os_tuning.numa_balancing) && !strcontains(output.plans[k].user_data[name], "dirty_ratio")
    ]]))
    error_message = "The clients and the management server of the BeeGFS labs get no kernel tuning: ${jsonencode(output.plans["beegfs-small/baremetal"].configs["cli0"].os_tuning)}."
  }

  # What is not kernel tuning stays every node's, and the list itself stays in the plan.
  assert {
    condition     = output.plans["beegfs-small/baremetal"].configs["cli0"].os_tuning.drop_caches == "between-phases" && alltrue([for k, p in output.plans : alltrue([for name, c in p.configs : !can(c.os_tuning.roles)])])
    error_message = "Clients keep drop_caches; no node config carries os_tuning.roles (the plan has applied it)."
  }

  # A lab that tunes nothing (roles: none) plans as before: an empty sysctl map everywhere.
  assert {
    condition     = alltrue([for name, c in output.plans["nss73-ha/baremetal"].configs : length(c.os_tuning.sysctl) == 0])
    error_message = "nss73-ha sets no kernel tuning on any node."
  }
}
