terraform {
  required_version = ">= 1.6"

  required_providers {
    maas = {
      source  = "canonical/maas"
      version = "~> 2.4"
    }
  }
}
