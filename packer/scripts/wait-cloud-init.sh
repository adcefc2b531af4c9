#!/usr/bin/env bash
# Packer, first step on every builder: wait until cloud-init's first boot is over
# (it may still be running apt or writing users when SSH answers). The file
# boot-finished is the signal; `cloud-init status --wait` can hang on a degraded boot.
set -euo pipefail

LIMIT=${PFSLAB_CLOUD_INIT_TIMEOUT:-1800}

main() {
  local waited=0
  if ! command -v cloud-init >/dev/null 2>&1; then
    echo "wait-cloud-init: no cloud-init on the source image; nothing to wait for"
    return 0
  fi
  # A booted machine has /run/cloud-init from its first moments (cloud-init's systemd
  # generator); a root file system provisioned in a chroot (scripts/hosts) was never
  # booted, and its first boot is the kit's script, not cloud-init.
  if [[ ! -d /run/cloud-init ]]; then
    echo "wait-cloud-init: this system was not booted by cloud-init (no /run/cloud-init: a chroot build); nothing to wait for"
    return 0
  fi
  until [[ -e /var/lib/cloud/instance/boot-finished ]]; do
    if ((waited >= LIMIT)); then
      echo "wait-cloud-init: cloud-init did not finish within ${LIMIT}s (see /var/log/cloud-init.log)" >&2
      exit 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  echo "wait-cloud-init: cloud-init finished (waited ${waited}s): $(cloud-init status 2>/dev/null | tr '\n' ' ')"
}

main "$@"
