# shellcheck shell=bash
# Target adapter: bare metal (targets/baremetal/target.json): MAAS machines, or
# existing hosts over SSH. Sourced for scripts/lab (pfslab/lifecycle/adapter.py: state_dir and tf_cloud come from there).

# MAAS machines need the maas provider's root; existing hosts need none.
target_root() {
  if lab_field "$1" targets.baremetal.maas >/dev/null 2>&1; then
    echo "$PFSLAB_ROOT/targets/baremetal/root/maas"
  else
    echo "$PFSLAB_ROOT/targets/baremetal/root"
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

# Usage: target_applied LAB TARGET DIR    after terraform apply: each existing host's
# boot script (the root's boot_scripts output) into DIR/boot/<node>.sh, which the SSH
# bring-up runs on it.
target_applied() {
  local lab=$1 target=$2 dir=$3 node
  mkdir -p "$dir/boot"
  tf_cloud "$lab" "$target" output -json boot_scripts >"$dir/boot/scripts.json"
  for node in $(jq -r '.baremetal.hosts // {} | keys[]' "$dir/inventory.json"); do
    jq -r --arg n "$node" '.[$n]' "$dir/boot/scripts.json" >"$dir/boot/$node.sh"
  done
  rm -f "$dir/boot/scripts.json"
}
