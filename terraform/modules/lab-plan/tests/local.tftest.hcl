# The lab plan of the embedded local lab, checked offline (no provider, no apply).

# The resolved labs are written by scripts/check-terraform (`pfslab lab export`).
variables {
  lab_file = "../../../build/terraform-test/local@local.json"
  target   = "local"
  paths = {
    state   = "/srv/lab/nodes/{node}"
    run     = "/run/pfslab/local/{node}"
    log     = "/srv/lab/logs/{node}"
    cluster = "/srv/lab/cluster"
    mount   = "/srv/lab/nodes/{node}/mnt"
  }
}

run "nodes_follow_the_lab_file" {
  command = plan

  assert {
    condition     = jsonencode(keys(output.nodes)) == jsonencode(["cli0", "cli1", "mon0", "osd0", "osd1", "osd2"])
    error_message = "Expected mon0, osd0-2 and cli0-1, got ${jsonencode(keys(output.nodes))}."
  }

  assert {
    condition     = output.nodes["mon0"].address == "10.99.0.10" && output.nodes["cli1"].address == "10.99.0.15"
    error_message = "Addresses must start at .10 in node order."
  }

  assert {
    condition     = jsonencode([for n in ["osd0", "osd1", "osd2"] : output.nodes[n].osd_ids]) == "[[0],[1],[2]]" && length(output.nodes["cli0"].osd_ids) == 0
    error_message = "OSD ids must be global and consecutive, one per data drive; clients have none."
  }

  assert {
    condition     = jsonencode(output.clients) == jsonencode(["cli0", "cli1"])
    error_message = "The clients are the nodes with a *-client role."
  }

  assert {
    condition     = output.nodes["osd1"].paths.state == "/srv/lab/nodes/osd1" && output.nodes["cli0"].paths.mount == "/srv/lab/nodes/cli0/mnt"
    error_message = "Path templates must be expanded per node."
  }
}

run "phases_start_monitors_first_and_clients_last" {
  command = plan

  assert {
    condition     = jsonencode([for p in output.phases : sort(keys(p))]) == jsonencode([["mon0/ceph-mon"], ["mon0/ceph-mgr"], ["osd0/ceph-osd", "osd1/ceph-osd", "osd2/ceph-osd"], ["mon0/ceph-mds"], ["cli0/ceph-client", "cli1/ceph-client"]])
    error_message = "CephFS starts mon, mgr, osd, mds, client: got ${jsonencode([for p in output.phases : keys(p)])}."
  }
}

run "node_configs_carry_what_the_roles_read" {
  command = plan

  assert {
    condition     = jsondecode(output.node_configs["osd2"]).disks[0].kind == "file" && jsondecode(output.node_configs["osd2"]).disks[0].size_bytes == 8599998464
    error_message = "A local OSD gets a sparse file of the lab's drive size (8.6 GB, 4 KiB aligned)."
  }

  assert {
    condition     = jsonencode(jsondecode(output.node_configs["cli0"]).cluster.mons) == jsonencode([{ address = "10.99.0.10", name = "mon0" }])
    error_message = "Every node knows the monitors."
  }

  assert {
    condition     = jsondecode(output.node_configs["osd0"]).cluster.fsid == jsondecode(output.node_configs["cli1"]).cluster.fsid
    error_message = "The fsid is one per lab."
  }

  assert {
    condition     = alltrue([for c in values(output.node_configs) : jsondecode(c).machine_kind == "netns"])
    error_message = "A local node is a network namespace (targets/local/target.json machine_kind), which the roles read: got ${jsonencode([for c in values(output.node_configs) : try(jsondecode(c).machine_kind, null)])}."
  }

  assert {
    condition     = jsondecode(output.node_configs["mon0"]).cluster.first["ceph-mds"] == "mon0"
    error_message = "The first MDS node creates the file system."
  }

  assert {
    condition     = !strcontains(jsonencode(output.inventory), "keyring")
    error_message = "The inventory must carry no secrets."
  }
}

run "cloud_targets_use_system_paths_and_devices" {
  command = plan

  variables {
    lab_file = "../../../build/terraform-test/local@aws.json"
    target   = "aws"
    paths    = {}
  }

  assert {
    condition     = output.nodes["osd0"].paths.state == "/var/lib/pfslab" && output.nodes["cli0"].paths.mount == "/mnt/pfslab/local"
    error_message = "On a cloud node paths are the system's, and clients mount at the lab's mount path."
  }

  assert {
    condition     = jsondecode(output.node_configs["osd0"]).disks[0].kind == "device"
    error_message = "On a cloud node an OSD uses a device."
  }
}

run "rejects_a_missing_lab_file" {
  command = plan

  variables {
    lab_file = "../../../labs/nope.yaml"
  }

  expect_failures = [var.lab_file]
}

run "rejects_a_raw_lab_file" {
  command = plan

  variables {
    lab_file = "../../../labs/local.yaml"
  }

  expect_failures = [var.lab_file]
}

run "rejects_a_lab_resolved_for_another_target" {
  command = plan

  variables {
    lab_file = "../../../build/terraform-test/local@aws.json"
    target   = "local"
  }

  expect_failures = [var.target]
}

run "rejects_an_unknown_target" {
  command = plan

  variables {
    target = "gcp"
  }

  expect_failures = [var.target]
}

run "a_cloud_plan_names_its_problems" {
  command = plan

  variables {
    lab_file = "../../../build/terraform-test/local@aws.json"
    target   = "aws"
    paths    = {}
  }

  assert {
    condition     = contains(output.problems, "targets.aws.groups has no entry for node group osd")
    error_message = "A lab without an aws mapping cannot be provisioned there, and the plan says which group is missing."
  }
}

run "rejects_a_bad_public_key" {
  command = plan

  variables {
    ssh_public_key = "-----BEGIN OPENSSH PRIVATE KEY-----"
  }

  expect_failures = [var.ssh_public_key]
}

run "the_deployment_id_tags_every_cloud_resource_when_given" {
  command = plan

  variables {
    lab_file   = "../../../build/terraform-test/aws-cephfs@aws.json"
    target     = "aws"
    paths      = {}
    deployment = "0123456789abcdef"
  }

  assert {
    condition     = output.tags.deployment == "0123456789abcdef" && output.tags.lab == "aws-cephfs" && output.tags.pfslab == "managed"
    error_message = "The deployment id joins the lab's tags (lab-down tells the kit's own resources from others' by it)."
  }
}

run "rejects_a_deployment_id_that_is_not_16_hex_digits" {
  command = plan

  variables {
    lab_file   = "../../../build/terraform-test/aws-cephfs@aws.json"
    target     = "aws"
    paths      = {}
    deployment = "managed"
  }

  expect_failures = [var.deployment]
}
