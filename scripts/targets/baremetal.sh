# shellcheck shell=bash
# Target adapter: bare metal (registry/targets/baremetal.json): MAAS machines, or
# existing hosts over SSH. Sourced by scripts/lab after scripts/lib/common.sh.

# MAAS machines need the maas provider's root; existing hosts need none.
target_root() {
  if lab_field "$1" targets.baremetal.maas >/dev/null 2>&1; then
    echo "$PFSLAB_ROOT/terraform/envs/baremetal/maas"
  else
    echo "$PFSLAB_ROOT/terraform/envs/baremetal"
  fi
}

# Usage: target_credentials LAB WHO NONE    MAAS labs need the MAAS API; hosts need none
target_credentials() {
  local lab=$1 who=$2 none=$3
  if [[ $(target_root "$lab") == */maas ]] && [[ -z ${MAAS_API_URL:-} || -z ${MAAS_API_KEY:-} ]]; then
    die "$who needs MAAS credentials (none found: set MAAS_API_URL and MAAS_API_KEY); $none"
  fi
}

# What the Terraform state still holds (nothing is tagged on machines the kit did not buy).
# A state that cannot be listed fails, with Terraform's reason on stderr.
target_leftovers() {
  local lab=$1
  [[ -s $(state_dir "$lab")/terraform.tfstate ]] || return 0
  tf_cloud "$lab" baremetal state list | sed 's/^/state /'
}

target_gone() { echo "nothing of it is left in the Terraform state"; }
