terraform {
  required_version = ">= 1.6"

  # State lives under build/<lab>/: scripts/lab passes the path at init.
  backend "local" {}
}
