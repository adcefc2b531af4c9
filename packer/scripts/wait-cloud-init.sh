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
