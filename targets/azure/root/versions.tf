terraform {
  required_version = ">= 1.6"

  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "~> 4.10"
    }
  }

  # State lives under build/<lab>/: scripts/lab passes the path at init.
  backend "local" {}
}

# Credentials come from the Azure CLI login (az login) or ARM_* variables.
provider "azurerm" {
  features {
    resource_group {
      # lab-down removes the lab's group whole, with anything left in it.
      prevent_deletion_if_contains_resources = false
    }
  }
}
