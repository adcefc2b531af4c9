# The AWS adapter planned with a mock of the real provider (its schema, no AWS): the lab
# plan of a shipped lab, resolved by `pfslab lab export` (scripts/check-terraform runs
# it), fed to the adapter as targets/aws/root does. Runs where the provider is
# installed (PFSLAB_TF_PROVIDERS); scripts/check-terraform skips it, saying so, elsewhere.

mock_provider "aws" {
  mock_data "aws_ami" {
    defaults = {
      id = "ami-0123456789abcdef0"
    }
  }
}

variables {
  ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPfslabTestKeyOnlyForTerraformTest pfslab-test"
}

run "plan_beegfs_medium" {
  command = plan

  module {
    source = "../../../terraform/modules/lab-plan"
  }

  variables {
    lab_file = "../../../build/terraform-test/aws-beegfs-medium@aws.json"
    target   = "aws"
    owner    = "tester"
    expiry   = "2026-01-01T08:00:00Z"
  }
}

run "beegfs_medium" {
  # Applied against the mock: computed attributes get values, nothing reaches AWS.
  command = apply

  variables {
    lab_name          = run.plan_beegfs_medium.lab.name
    resource_name     = run.plan_beegfs_medium.lab.instance.cloud_name
    subnet_cidr       = run.plan_beegfs_medium.lab.network.subnet
    availability_zone = run.plan_beegfs_medium.lab.targets.aws.availability_zone
    placement         = run.plan_beegfs_medium.lab.targets.aws.placement
    public_nodes      = run.plan_beegfs_medium.public_nodes
    ssh_cidrs         = run.plan_beegfs_medium.lab.targets.aws.ssh_cidrs
    images            = run.plan_beegfs_medium.lab.targets.aws.images
    nodes             = { for name, n in run.plan_beegfs_medium.nodes : name => { address = n.address, roles = n.roles } }
    machines          = run.plan_beegfs_medium.machines
    user_data         = run.plan_beegfs_medium.user_data
    tags              = run.plan_beegfs_medium.tags
  }

  assert {
    condition     = length(aws_instance.node) == 39 && aws_instance.node["ss4"].instance_type == "i3en.24xlarge" && aws_instance.node["cli31"].instance_type == "c5n.18xlarge"
    error_message = "One instance per node: 1 mgmt, 1 mds, 5 ss (i3en.24xlarge), 32 clients (c5n.18xlarge)."
  }

  assert {
    condition     = alltrue([for name, m in var.machines : (m.efa_interfaces > 0) == (aws_network_interface.primary[name].interface_type == "efa")])
    error_message = "The primary interface is an EFA interface exactly on the EFA instance types."
  }

  assert {
    condition     = alltrue([for name, m in var.machines : length([for k, v in aws_network_interface.efa : v if startswith(k, "${name}/")]) == max(0, m.efa_interfaces - 1)])
    error_message = "One more EFA interface per further network card of each instance type."
  }

  assert {
    condition     = alltrue([for k, v in aws_network_interface.efa : v.interface_type == "efa"])
    error_message = "Every extra interface is interface_type efa."
  }

  assert {
    condition     = aws_key_pair.lab.key_name == var.resource_name && aws_security_group.lab.name == var.resource_name && aws_placement_group.lab[0].name == var.resource_name && startswith(var.resource_name, "pfslab-aws-beegfs-medium-")
    error_message = "The key pair, security group and placement group are named after the lab's instance.cloud_name (lab and owner), not the lab alone: two owners' labs of one name must not collide."
  }

  assert {
    condition     = aws_placement_group.lab[0].strategy == "cluster" && alltrue([for i in aws_instance.node : i.availability_zone == var.availability_zone])
    error_message = "One cluster placement group; every instance in the lab's zone."
  }

  assert {
    condition     = alltrue([for name, i in aws_instance.node : i.volume_tags["lab"] == "aws-beegfs-medium" && i.volume_tags["owner"] == "tester" && i.volume_tags["expiry"] == "2026-01-01T08:00:00Z"])
    error_message = "Root volumes carry the lab's tags (the provider's default_tags do not reach them)."
  }

  assert {
    condition     = alltrue([for i in aws_instance.node : i.root_block_device[0].encrypted && i.metadata_options[0].http_tokens == "required"])
    error_message = "Encrypted root volumes; IMDSv2 only."
  }

  assert {
    condition     = keys(aws_eip.node) == [run.plan_beegfs_medium.inventory.login]
    error_message = "Only the login node gets a public address by default."
  }

  assert {
    condition     = toset([for r in aws_vpc_security_group_ingress_rule.ssh : r.cidr_ipv4]) == toset(var.ssh_cidrs) && alltrue([for r in aws_vpc_security_group_ingress_rule.ssh : r.from_port == 22 && r.to_port == 22])
    error_message = "From outside, the security group admits SSH from ssh_cidrs only."
  }

  assert {
    condition     = aws_vpc_security_group_ingress_rule.members.ip_protocol == "-1" && aws_vpc_security_group_egress_rule.members.ip_protocol == "-1"
    error_message = "Members admit all traffic from each other (EFA needs it both ways)."
  }

  assert {
    condition     = aws_subnet.lab[0].map_public_ip_on_launch == false
    error_message = "No public address is handed out by the subnet."
  }
}

run "plan_cephfs_all_public" {
  command = plan

  module {
    source = "../../../terraform/modules/lab-plan"
  }

  variables {
    lab_file = "../../../build/terraform-test/aws-cephfs@aws.json"
    target   = "aws"
    expiry   = "2026-01-01T08:00:00Z"
  }
}

run "cephfs_no_placement_group_every_node_public" {
  # Applied against the mock: computed attributes get values, nothing reaches AWS.
  command = apply

  variables {
    lab_name          = run.plan_cephfs_all_public.lab.name
    resource_name     = run.plan_cephfs_all_public.lab.instance.cloud_name
    subnet_cidr       = run.plan_cephfs_all_public.lab.network.subnet
    availability_zone = run.plan_cephfs_all_public.lab.targets.aws.availability_zone
    placement         = "none"
    public_nodes      = keys(run.plan_cephfs_all_public.nodes)
    ssh_cidrs         = ["198.51.100.7/32"]
    images            = run.plan_cephfs_all_public.lab.targets.aws.images
    nodes             = { for name, n in run.plan_cephfs_all_public.nodes : name => { address = n.address, roles = n.roles } }
    machines          = run.plan_cephfs_all_public.machines
    user_data         = run.plan_cephfs_all_public.user_data
    tags              = run.plan_cephfs_all_public.tags
  }

  assert {
    condition     = length(aws_placement_group.lab) == 0
    error_message = "placement none: no placement group."
  }

  assert {
    condition     = length(aws_eip.node) == length(var.nodes)
    error_message = "public_ip all: every node gets an address."
  }
}

run "rejects_a_public_node_that_is_not_a_node" {
  command = plan

  variables {
    lab_name          = run.plan_cephfs_all_public.lab.name
    resource_name     = run.plan_cephfs_all_public.lab.instance.cloud_name
    subnet_cidr       = run.plan_cephfs_all_public.lab.network.subnet
    availability_zone = run.plan_cephfs_all_public.lab.targets.aws.availability_zone
    placement         = "cluster"
    public_nodes      = ["bastion9"]
    ssh_cidrs         = ["198.51.100.7/32"]
    images            = run.plan_cephfs_all_public.lab.targets.aws.images
    nodes             = { for name, n in run.plan_cephfs_all_public.nodes : name => { address = n.address, roles = n.roles } }
    machines          = run.plan_cephfs_all_public.machines
    user_data         = run.plan_cephfs_all_public.user_data
    tags              = run.plan_cephfs_all_public.tags
  }

  expect_failures = [var.public_nodes]
}

run "rejects_a_resource_name_ec2_refuses" {
  command = plan

  variables {
    lab_name          = run.plan_cephfs_all_public.lab.name
    resource_name     = "sg-pfslab-aws-cephfs"
    subnet_cidr       = run.plan_cephfs_all_public.lab.network.subnet
    availability_zone = run.plan_cephfs_all_public.lab.targets.aws.availability_zone
    placement         = "cluster"
    public_nodes      = []
    ssh_cidrs         = ["198.51.100.7/32"]
    images            = run.plan_cephfs_all_public.lab.targets.aws.images
    nodes             = { for name, n in run.plan_cephfs_all_public.nodes : name => { address = n.address, roles = n.roles } }
    machines          = run.plan_cephfs_all_public.machines
    user_data         = run.plan_cephfs_all_public.user_data
    tags              = run.plan_cephfs_all_public.tags
  }

  expect_failures = [var.resource_name]
}
