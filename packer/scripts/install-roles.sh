#!/usr/bin/env bash
# Packer: run the role install steps the image serves, exactly as a node would
# (scripts/roles/<family> install <component>): the common role's tuning and fabric
# packages, then the family's components. Each is recorded in /etc/pfslab/image.json.
#
# Environment (from builds.pkr.hcl): PFSLAB_FAMILY, PFSLAB_COMPONENTS (space
# separated), PFSLAB_FABRIC (or none), PFSLAB_TARGET, PFSLAB_FS_SETTINGS (JSON).
set -euo pipefail
KIT=/opt/pfslab
# shellcheck source=scripts/lib/common.sh
source "$KIT/scripts/lib/common.sh"
PFSLAB_LOG_TAG=install-roles

IMAGE_JSON=/etc/pfslab/image.json

# A node config for install steps: roles read their settings (repositories, the
# fabric, the GPFS installer) from it as they would on a lab node.
bake_config() {
  local components=$1
  jq -n --arg family "$PFSLAB_FAMILY" --arg target "$PFSLAB_TARGET" --arg fabric "$PFSLAB_FABRIC" \
    --arg components "$components" --argjson fs "$PFSLAB_FS_SETTINGS" '{
      lab: "image", target: $target,
      node: {name: "image-build", group: "image", index: 0, address: "127.0.0.1",
             roles: ($components | split(" ") | map("\($family)-\(.)"))},
      filesystem: ({type: $family, mount: "/mnt/pfslab"} + {($family): $fs}),
      os_tuning: {}, network: {fabric: (if $fabric == "none" then "ethernet" else $fabric end)},
      cluster: {first: {}},
      paths: {state: "/var/lib/pfslab", run: "/run/pfslab", log: "/var/log/pfslab",
              cluster: "/etc/pfslab/cluster", mount: "/mnt/pfslab"}}'
}

# Run one install step and record it in image.json.
install_step() {
  local family=$1 component=$2 start=$SECONDS tmp
  log "scripts/roles/$family install $component"
  "$KIT/scripts/roles/$family" install "$component"
  tmp=$(mktemp)
  jq --arg s "$family $component" '.installed += [$s]' "$IMAGE_JSON" >"$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$IMAGE_JSON"
  log "$family $component installed in $((SECONDS - start))s"
}

main() {
  local config c
  : "${PFSLAB_FAMILY:?} ${PFSLAB_COMPONENTS:?} ${PFSLAB_FABRIC:?} ${PFSLAB_TARGET:?} ${PFSLAB_FS_SETTINGS:?}"
  [[ -x $KIT/scripts/roles/$PFSLAB_FAMILY ]] || die "no role script $KIT/scripts/roles/$PFSLAB_FAMILY"
  config=$(mktemp --suffix=.json)
  bake_config "$PFSLAB_COMPONENTS" >"$config"
  export PFSLAB_NODE_CONFIG=$config
  install_step common tuning
  if [[ $PFSLAB_FABRIC != none ]]; then
    install_step common fabric
  else
    log "fabric: none (the source image brings its own fabric stack)"
  fi
  for c in $PFSLAB_COMPONENTS; do
    install_step "$PFSLAB_FAMILY" "$c"
  done
  # What the bake added (a repository's list and key) is the image's, not a lab's: no
  # lab-down may take it back (scripts/host-forget reads this ledger).
  rm -f /var/lib/pfslab/host-changes
  rm -f "$config"
}

main "$@"
