#!/usr/bin/env bash
# Packer, client images: the Spack toolchain (scripts/toolchain: IOR, mdtest, fio,
# IOzone, Open MPI...) when PFSLAB_TOOLCHAIN=on and the kit has the script. It needs
# the internet (or a MIRROR bundle in the environment) and hours of compiling, so
# the qemu test build leaves it off (variable `toolchain`).
set -euo pipefail
KIT=/opt/pfslab
# shellcheck source=scripts/lib/common.sh
source "$KIT/scripts/lib/common.sh"
# shellcheck source=scripts/lib/pkg.sh
source "$KIT/scripts/lib/pkg.sh"
PFSLAB_LOG_TAG=toolchain-step

IMAGE_JSON=/etc/pfslab/image.json

# What Spack needs to fetch and compile the toolchain.
SPACK_BUILD_PACKAGES=(build-essential gfortran git curl ca-certificates python3 unzip bzip2 xz-utils
  patch file gnupg)

record() {
  local tmp
  tmp=$(mktemp)
  jq --arg t "$1" '.toolchain_step = $t' "$IMAGE_JSON" >"$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$IMAGE_JSON"
}

main() {
  local start=$SECONDS
  if [[ ${PFSLAB_TOOLCHAIN:-off} == distro ]]; then
    # The distribution's benchmarks and the kit's Python environment (scripts/deps
    # login): what a login node needs where the Spack toolchain is not wanted.
    "$KIT/scripts/deps" login
    record "distro in $((SECONDS - start))s"
    return 0
  fi
  if [[ ${PFSLAB_TOOLCHAIN:-off} != on ]]; then
    log "toolchain off for this image (server images never get it; see the variable toolchain); skipped"
    record skipped
    return 0
  fi
  if [[ ! -x $KIT/scripts/toolchain ]]; then
    log "the kit has no scripts/toolchain yet; skipped"
    record "absent from the kit"
    return 0
  fi
  pkg_install "${SPACK_BUILD_PACKAGES[@]}"
  # The family's file system decides the toolchain profile (BeeGFS: IOR +beegfs, against
  # the headers the family's client role installed just before).
  # PFSLAB_FAMILY is a family name (ceph), the folder a file system's (cephfs).
  PFSLAB_TOOLCHAIN_FILESYSTEM=$(jq -r --arg f "${PFSLAB_FAMILY:?PFSLAB_FAMILY is not set}" 'select(.family == $f) | .filesystem' "$KIT"/families/*/family.json) \
    "$KIT/scripts/toolchain"
  record "done in $((SECONDS - start))s"
}

main "$@"
