terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.80"
    }
  }

  # State lives under build/<lab>/: scripts/lab passes the path at init.
  backend "local" {}
}

provider "aws" {
  region = local.aws.region

  # Every resource the provider creates carries the lab's tags, so that
  # `make lab-down` can prove nothing tagged lab=<name> is left.
  default_tags {
    tags = module.plan.tags
  }

  # Null (AWS itself) unless an emulator is named: credentials are still checked,
  # through the emulator's own STS.
  endpoints {
    ec2 = var.aws_endpoint
    sts = var.aws_endpoint
  }
}
