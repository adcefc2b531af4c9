terraform {
  required_version = ">= 1.6"

  required_providers {
    maas = {
      source  = "canonical/maas"
      version = "~> 2.4"
    }
  }

  # State lives under build/<lab>/: scripts/lab passes the path at init.
  backend "local" {}
}

# MAAS_API_URL and MAAS_API_KEY come from the environment (scripts/lab checks them).
provider "maas" {
  api_version = "2.0"
}
