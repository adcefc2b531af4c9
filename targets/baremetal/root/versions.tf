terraform {
  required_version = ">= 1.6"

  # No provider: existing hosts are recorded with terraform_data only.
  # State lives under build/<lab>/: scripts/lab passes the path at init.
  backend "local" {}
}
