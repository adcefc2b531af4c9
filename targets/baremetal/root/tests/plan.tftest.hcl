# The provider-free bare-metal root with existing hosts, planned offline: what
# `make lab-up LAB=baremetal-cephfs-hosts` records and the inventory it writes.

variables {
  lab_file            = "/dev/null"
  kit_root            = "/opt/pfslab"
  state_root          = "/opt/pfslab/build/baremetal-cephfs-hosts"
  ssh_public_key_file = "/opt/pfslab/build/baremetal-cephfs-hosts/ssh/id_ed25519.pub"
  expiry              = "2026-01-01T08:00:00Z"
}

run "existing_hosts_become_the_inventory" {
  command = plan

  variables {
    lab_file = abspath("../../../build/terraform-test/baremetal-cephfs-hosts@baremetal.json")
  }

  assert {
    condition     = output.inventory.target == "baremetal" && length(output.inventory.nodes) == 5
    error_message = "Five hosts, target baremetal."
  }

  assert {
    condition     = [for n in output.inventory.nodes : n.ssh_address if n.name == "osd2"][0] == "192.0.2.13"
    error_message = "The kit reaches an existing host at the address the lab file gives."
  }

  assert {
    condition     = output.inventory.ssh.key == "/opt/pfslab/build/baremetal-cephfs-hosts/ssh/id_ed25519" && output.inventory.ssh.user == "root"
    error_message = "The inventory names the lab's key (a path, never the key) and the SSH user."
  }

  assert {
    condition     = jsonencode(output.inventory.phases[0]) == jsonencode([{ node = "mon0", role = "ceph-mon" }]) && length(output.inventory.phases) == 5
    error_message = "The inventory carries the start phases the kit runs over SSH."
  }

  assert {
    condition     = length(terraform_data.host) == 5 && terraform_data.host["cli0"].input.address == "192.0.2.20"
    error_message = "Each host is recorded in the state."
  }

  assert {
    condition     = startswith(output.boot_scripts["osd0"], "#!/bin/sh") && strcontains(output.boot_scripts["osd0"], "/opt/pfslab/scripts/roles/ceph' 'install' 'osd'")
    error_message = "Each host gets its first boot as a script."
  }

  assert {
    condition     = !strcontains(jsonencode(output.inventory), "PRIVATE KEY")
    error_message = "No private key in the inventory."
  }
}

run "refuses_a_lab_without_hosts" {
  command = plan

  variables {
    lab_file = abspath("../../../build/terraform-test/aws-nfs@baremetal.json")
  }

  expect_failures = [terraform_data.host]
}

run "rejects_a_private_key_file" {
  command = plan

  variables {
    lab_file            = abspath("../../../build/terraform-test/baremetal-cephfs-hosts@baremetal.json")
    ssh_public_key_file = "/opt/pfslab/build/x/ssh/id_ed25519"
  }

  expect_failures = [var.ssh_public_key_file]
}
