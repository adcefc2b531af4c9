# The AWS adapter: EC2 instances for the lab plan's nodes, with EFA interfaces on
# every network card, instance-store NVMe (found by cloud-init), one cluster
# placement group and one security group whose members admit each other (EFA needs
# all traffic between them). Everything the lab plan decided arrives as variables.

locals {
  prefix      = var.resource_name
  create_vpc  = var.vpc_id == null
  zone        = var.availability_zone
  prefix_len  = split("/", var.subnet_cidr)[1]
  subnet_id   = local.create_vpc ? aws_subnet.lab[0].id : var.subnet_id
  image_kinds = toset(distinct([for m in values(var.machines) : m.image]))

  # EFA interfaces beyond the primary one: network cards 1..n-1, device index 0.
  extra_efa = merge([
    for name, m in var.machines : {
      for card in range(1, max(1, m.efa_interfaces)) : "${name}/${card}" => { node = name, card = card }
    }
  ]...)
}

data "aws_ami" "image" {
  for_each    = { for k, i in var.images : k => i if i.id == null && contains(local.image_kinds, k) }
  most_recent = true
  owners      = each.value.owners

  filter {
    name   = "name"
    values = [each.value.name]
  }
}

# ---- network (only when no existing VPC is given) ---------------------------------

resource "aws_vpc" "lab" {
  #checkov:skip=CKV2_AWS_11:A lab lives for hours and carries benchmark traffic only; flow logs would cost more than the lab's network and record nothing worth keeping.
  count                = local.create_vpc ? 1 : 0
  cidr_block           = var.subnet_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = { Name = local.prefix }
}

# The VPC's default security group admits nothing: the lab uses its own group.
resource "aws_default_security_group" "lab" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.lab[0].id
  tags   = { Name = "${local.prefix}-default-closed" }
}

resource "aws_internet_gateway" "lab" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.lab[0].id
  tags   = { Name = local.prefix }
}

resource "aws_subnet" "lab" {
  count                   = local.create_vpc ? 1 : 0
  vpc_id                  = aws_vpc.lab[0].id
  cidr_block              = var.subnet_cidr
  availability_zone       = local.zone
  map_public_ip_on_launch = false
  tags                    = { Name = local.prefix }
}

resource "aws_route_table" "lab" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.lab[0].id

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.lab[0].id
  }

  tags = { Name = local.prefix }
}

resource "aws_route_table_association" "lab" {
  count          = local.create_vpc ? 1 : 0
  subnet_id      = aws_subnet.lab[0].id
  route_table_id = aws_route_table.lab[0].id
}

data "aws_subnet" "given" {
  count = local.create_vpc ? 0 : 1
  id    = var.subnet_id

  lifecycle {
    postcondition {
      condition     = self.cidr_block == var.subnet_cidr && self.vpc_id == var.vpc_id
      error_message = "Subnet ${var.subnet_id} must belong to ${var.vpc_id} and have the lab's CIDR ${var.subnet_cidr} (the plan fixes node addresses in it)."
    }
  }
}

# ---- placement, access ----------------------------------------------------------------

resource "aws_placement_group" "lab" {
  count    = var.placement == "cluster" ? 1 : 0
  name     = local.prefix
  strategy = "cluster"
}

resource "aws_security_group" "lab" {
  name        = local.prefix
  description = "pfslab lab ${var.lab_name}: all traffic between members (EFA), SSH from the kit"
  vpc_id      = local.create_vpc ? aws_vpc.lab[0].id : var.vpc_id

  tags = { Name = local.prefix }
}

# EFA requires a group whose members admit all traffic from the group itself.
resource "aws_vpc_security_group_ingress_rule" "members" {
  security_group_id            = aws_security_group.lab.id
  description                  = "All traffic from the lab's own nodes (EFA, storage, MPI)"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.lab.id
}

resource "aws_vpc_security_group_egress_rule" "members" {
  security_group_id            = aws_security_group.lab.id
  description                  = "All traffic to the lab's own nodes (EFA needs it both ways)"
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.lab.id
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each          = toset(var.ssh_cidrs)
  security_group_id = aws_security_group.lab.id
  description       = "SSH from the kit's machine"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.lab.id
  description       = "HTTPS out: package repositories (apt, BeeGFS, Ceph) at first boot"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "http" {
  security_group_id = aws_security_group.lab.id
  description       = "HTTP out: Debian mirrors serve signed packages over plain HTTP"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_key_pair" "lab" {
  key_name   = local.prefix
  public_key = var.ssh_public_key
}

# ---- nodes ------------------------------------------------------------------------------

# The primary interface carries the plan's address; on an EFA type it is an EFA
# interface itself (EFA with ENA), on network card 0.
resource "aws_network_interface" "primary" {
  for_each          = var.nodes
  subnet_id         = local.subnet_id
  private_ips       = [each.value.address]
  security_groups   = [aws_security_group.lab.id]
  interface_type    = var.machines[each.key].efa_interfaces > 0 ? "efa" : null
  source_dest_check = true
  description       = "${local.prefix} ${each.key} primary"
  tags              = { Name = "${local.prefix}-${each.key}" }
}

# One more EFA interface per further network card of the instance type.
resource "aws_network_interface" "efa" {
  for_each        = local.extra_efa
  subnet_id       = local.subnet_id
  security_groups = [aws_security_group.lab.id]
  interface_type  = "efa"
  description     = "${local.prefix} ${each.value.node} EFA card ${each.value.card}"
  tags            = { Name = "${local.prefix}-${each.value.node}-efa${each.value.card}" }
}

resource "aws_instance" "node" {
  #checkov:skip=CKV2_AWS_41:Nodes need no AWS API access, so they get no IAM role (least privilege).
  for_each          = var.nodes
  ami               = try(coalesce(var.images[var.machines[each.key].image].id, data.aws_ami.image[var.machines[each.key].image].id), null)
  instance_type     = var.machines[each.key].type
  availability_zone = local.zone
  placement_group   = var.placement == "cluster" ? aws_placement_group.lab[0].id : null
  key_name          = aws_key_pair.lab.key_name
  user_data_base64  = base64gzip(var.user_data[each.key])
  ebs_optimized     = true
  monitoring        = true

  network_interface {
    network_interface_id = aws_network_interface.primary[each.key].id
    device_index         = 0
    network_card_index   = 0
  }

  dynamic "network_interface" {
    for_each = { for k, v in local.extra_efa : k => v if v.node == each.key }
    content {
      network_interface_id = aws_network_interface.efa[network_interface.key].id
      device_index         = 0
      network_card_index   = network_interface.value.card
    }
  }

  root_block_device {
    volume_type           = "gp3"
    volume_size           = var.machines[each.key].root_volume_gb
    encrypted             = true
    delete_on_termination = true
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  tags = { Name = "${local.prefix}-${each.key}" }
  # The provider's default_tags do not reach the root volume: the lab's own tags make a
  # stray volume findable by lab-down's sweep of everything tagged with the lab.
  volume_tags = merge(var.tags, { Name = "${local.prefix}-${each.key}" })

  lifecycle {
    precondition {
      condition     = var.machines[each.key].image == "server" || contains(keys(var.images), var.machines[each.key].image)
      error_message = "Node ${each.key} boots the ${var.machines[each.key].image} image, which targets.aws.images does not define."
    }
  }
}

resource "aws_eip" "node" {
  for_each          = toset(var.public_nodes)
  domain            = "vpc"
  network_interface = aws_network_interface.primary[each.key].id
  tags              = { Name = "${local.prefix}-${each.key}" }
  depends_on        = [aws_internet_gateway.lab, aws_instance.node]
}
