# The local root, planned offline: what `make lab-up` would create, without running it.

variables {
  lab_file   = "/dev/null"
  kit_root   = "/opt/pfslab"
  state_root = "/opt/pfslab/build/local"
}

run "inventory_of_the_local_lab" {
  command = plan

  variables {
    lab_file = abspath("../../../build/terraform-test/local@local.json")
  }

  assert {
    condition     = output.inventory.lab == "local" && output.inventory.target == "local"
    error_message = "The inventory names its lab and target."
  }

  assert {
    condition     = output.inventory.launcher.env.OMPI_MCA_plm_rsh_agent == "/opt/pfslab/scripts/local/nsrsh" && output.inventory.launcher.env.RSH == "/opt/pfslab/scripts/local/nsrsh"
    error_message = "MPI and IOzone reach the nodes through nsrsh."
  }

  assert {
    condition     = output.inventory.launcher.master_address == "10.99.0.1"
    error_message = "The host's bridge address is the first of the subnet."
  }

  assert {
    condition     = output.inventory.local.state_root == "/opt/pfslab/build/local/lab" && output.inventory.local.netns["osd0"] == "pfs-e9d854-osd0"
    error_message = "The lab's files live under build/<lab>/lab and namespaces carry the lab instance's prefix (pfslab lab export resolves it for the checkout /opt/pfslab)."
  }

  assert {
    condition     = output.inventory.local.run_root == "/run/pfslab/local-4fbdc7bc" && output.inventory.local.instance == "local-4fbdc7bc" && output.inventory.local.cgroup == "pfslab-throttle-local-4fbdc7bc"
    error_message = "Run root and cgroup are the lab instance's (lab and checkout id), not the lab's alone."
  }

  assert {
    condition     = output.inventory.launcher.env.PFSLAB_NSRSH_HOSTS == "/run/pfslab/local-4fbdc7bc/hosts" && output.inventory.filesystem.mount == "/mnt/pfslab/local-4fbdc7bc"
    error_message = "Jobs look hosts up in their own lab instance's records only, and the common mount path is the instance's."
  }

  assert {
    condition     = length(output.inventory.nodes) == 6 && output.inventory.clients == tolist(["cli0", "cli1"])
    error_message = "Six nodes, two of them clients."
  }
}

run "rejects_a_relative_lab_file" {
  command = plan

  variables {
    lab_file = "labs/local.yaml"
  }

  expect_failures = [var.lab_file]
}
