# shellcheck shell=bash
# Target adapter: Azure (targets/azure/target.json). Sourced for scripts/lab (pfslab/lifecycle/adapter.py) and
# scripts/images after scripts/lib/common.sh; defines the target_* functions only.

# The Packer source scripts/images builds this target's images with.
target_packer_source() { echo azure-arm.hpc; }

# Prints the Packer variables of the Azure login to use: none for a service principal
# in ARM_* (the template reads those itself), the CLI's subscription otherwise.
target_packer_vars() {
  [[ -n ${ARM_CLIENT_ID:-} && -n ${ARM_TENANT_ID:-} && -n ${ARM_SUBSCRIPTION_ID:-} ]] && return 0
  printf '%s\n' "azure_use_cli_auth=true" "azure_subscription_id=$(timeout 60 az account show --query id -o tsv)"
}

# Usage: target_credentials LAB WHO NONE    dies with one line when none work
target_credentials() {
  local who=$2 none=$3
  [[ -n ${ARM_CLIENT_ID:-} && -n ${ARM_TENANT_ID:-} && -n ${ARM_SUBSCRIPTION_ID:-} ]] && return 0
  command -v az >/dev/null 2>&1 && timeout 60 az account show --output none >/dev/null 2>&1 && return 0
  die "$who needs Azure credentials (none found: run 'az login', or set ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and ARM_SUBSCRIPTION_ID); $none"
}

# What Azure still holds tagged with the lab and its owner, one resource id per line
# (az filters on one tag; the owner is matched in the query). Another user's lab of
# the same name is not this lab's leftover. A failed listing fails (pfslab/lifecycle/down.py
# cloud_leftovers): an empty answer must mean that Azure has nothing.
target_leftovers() {
  local lab=$1 owner
  owner=$(lab_field "$lab" instance.owner) || return
  az resource list --tag "lab=$lab" --query "[?tags.owner=='${owner//\'/}'].id" --output tsv | sed '/^$/d'
}

target_gone() { echo "nothing tagged lab=$1 owner=$(lab_field "$1" instance.owner) is left (az resource list --tag lab=$1)"; }

# The VM's serial console log (boot diagnostics, enabled by targets/azure/module), where
# cloud-init prints the host keys: what scripts/lib/remote.sh pins them from.
# shellcheck disable=SC2034 # read by scripts/lib/remote.sh
TARGET_CONSOLE_CMD=az
target_console() {
  local lab=$1 node=$2 id
  id=$(jq -er --arg n "$node" '.azure.vm_ids[$n]' "$(remote_inv "$lab")")
  az vm boot-diagnostics get-boot-log --ids "$id" --output tsv
}
