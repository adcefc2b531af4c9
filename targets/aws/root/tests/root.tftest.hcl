# The aws root (what `make lab-up LAB=aws-*` applies) against a mock of the real
# provider: its schema, no AWS. Each shipped AWS lab, resolved by `pfslab lab export`
# (scripts/check-terraform), becomes instances, EFA interfaces, a placement group, a
# security group and the inventory the kit writes. Runs where the provider is installed
# (PFSLAB_TF_PROVIDERS, Terraform's local mirrors or the registry); skipped, saying so,
# elsewhere. The module's own resources are asserted in modules/aws/tests.

mock_provider "aws" {
  mock_data "aws_ami" {
    defaults = {
      id = "ami-0123456789abcdef0"
    }
  }
}

variables {
  kit_root            = "/opt/pfslab"
  ssh_public_key_file = abspath("tests/test-key.pub")
  owner               = "tester"
  expiry              = "2026-01-01T08:00:00Z"
}

run "aws_beegfs_medium" {
  command = apply

  variables {
    lab_file   = abspath("../../../build/terraform-test/aws-beegfs-medium@aws.json")
    state_root = "/opt/pfslab/build/aws-beegfs-medium"
  }

  assert {
    condition     = output.inventory.target == "aws" && length(output.inventory.aws.instance_ids) == length(output.inventory.nodes) && length(output.inventory.nodes) == 39
    error_message = "One instance per node of the lab (39)."
  }

  assert {
    condition     = alltrue([for n in output.inventory.nodes : length(output.inventory.aws.efa_interfaces[n.name]) == jsondecode(file(var.lab_file)).targets.aws.groups[n.group].efa_interfaces]) && length(flatten(values(output.inventory.aws.efa_interfaces))) == 38 && output.inventory.aws.placement_group == jsondecode(file(var.lab_file)).instance.cloud_name
    error_message = "Each node has as many EFA interfaces as its group maps (38 in all: every node but mgmt), in the lab's placement group."
  }

  assert {
    condition     = output.inventory.aws.tags == { lab = "aws-beegfs-medium", owner = "tester", expiry = "2026-01-01T08:00:00Z", pfslab = "managed" }
    error_message = "The inventory records the tags every resource carries."
  }

  assert {
    condition     = length([for n in output.inventory.nodes : n if n.ssh_jump == null]) == 1 && [for n in output.inventory.nodes : n.name if n.ssh_jump == null][0] == output.inventory.login
    error_message = "Only the login node is reached directly; the others through it."
  }

  assert {
    condition     = output.inventory.launcher.env.OMPI_MCA_plm_rsh_agent == "/opt/pfslab/scripts/lab-rsh"
    error_message = "Benchmarks are launched from the login node over the lab's own ssh (registry/launcher.json)."
  }

  assert {
    condition     = output.inventory.ssh.key == "/opt/pfslab/build/aws-beegfs-medium/ssh/id_ed25519"
    error_message = "The kit reaches the nodes with the lab's own key."
  }
}

run "aws_cephfs" {
  command = apply

  variables {
    lab_file   = abspath("../../../build/terraform-test/aws-cephfs@aws.json")
    state_root = "/opt/pfslab/build/aws-cephfs"
    deployment = "0123456789abcdef"
  }

  assert {
    condition     = output.inventory.aws.tags.deployment == "0123456789abcdef" && output.inventory.aws.tags.lab == "aws-cephfs"
    error_message = "The deployment id scripts/lab draws tags every resource (the provider's default_tags) and is in the inventory."
  }

  assert {
    condition     = length(output.inventory.aws.instance_ids) == length(output.inventory.nodes) && output.inventory.filesystem.type == "cephfs"
    error_message = "One instance per node of aws-cephfs."
  }

  assert {
    condition     = output.inventory.aws.security_group != null && output.inventory.aws.subnet_id != null
    error_message = "aws-cephfs gets its security group and subnet."
  }
}

run "aws_nfs" {
  command = apply

  variables {
    lab_file   = abspath("../../../build/terraform-test/aws-nfs@aws.json")
    state_root = "/opt/pfslab/build/aws-nfs"
  }

  assert {
    condition     = length(output.inventory.aws.instance_ids) == length(output.inventory.nodes) && output.inventory.filesystem.type == "nfs"
    error_message = "One instance per node of aws-nfs."
  }
}
