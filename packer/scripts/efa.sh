#!/usr/bin/env bash
# Packer, amazon-ebs only: AWS's EFA installer (the efa kernel driver through DKMS,
# rdma-core, libfabric with the efa provider, under /opt/amazon/efa). Debian's cloud
# kernel has no efa module. PFSLAB_EFA_INSTALLER_VERSION empty skips it.
# The tarball runs as root: it is unpacked only once its sha256 matched
# PFSLAB_EFA_INSTALLER_SHA256 (targets/aws/image.pkr.hcl, aws_efa_installer_sha256).
set -euo pipefail
KIT=${PFSLAB_KIT:-/opt/pfslab}
# shellcheck source=scripts/lib/common.sh
source "$KIT/scripts/lib/common.sh"
# shellcheck source=scripts/lib/pkg.sh
source "$KIT/scripts/lib/pkg.sh"
PFSLAB_LOG_TAG=efa

URL_BASE=${PFSLAB_EFA_URL_BASE:-https://efa-installer.amazonaws.com}
PINNED_IN="targets/aws/image.pkr.hcl, aws_efa_installer_sha256"

main() {
  local version=${PFSLAB_EFA_INSTALLER_VERSION:-} sha256=${PFSLAB_EFA_INSTALLER_SHA256:-} tmp tarball
  if [[ -z $version ]]; then
    log "no EFA installer version given; skipped"
    return 0
  fi
  if [[ -e /opt/amazon/efa/bin/fi_info ]] && lsmod 2>/dev/null | grep -q '^efa '; then
    log "EFA software already present; nothing to do"
    return 0
  fi
  tarball=aws-efa-installer-$version.tar.gz
  # Refused before anything is installed or downloaded: a version with no pin.
  [[ -n $sha256 ]] || die "$tarball: no sha256 pinned ($PINNED_IN); refusing an unverified download"
  pkg_install curl ca-certificates tar "linux-headers-$(uname -r)" dkms
  tmp=$(mktemp -d)
  log "downloading $tarball"
  curl -fsSL --retry 3 -o "$tmp/efa.tar.gz" "$URL_BASE/$tarball" ||
    die "cannot download $URL_BASE/$tarball"
  (verify_sha256 "$tmp/efa.tar.gz" "$sha256" "$tarball" "$PINNED_IN") || { rm -rf "$tmp"; exit 2; }
  log "$tarball: sha256 $sha256 as pinned"
  tar -xzf "$tmp/efa.tar.gz" -C "$tmp"
  (cd "$tmp/aws-efa-installer" && ./efa_installer.sh -y) || die "efa_installer.sh failed (its output is above)"
  rm -rf "$tmp"
  log "EFA installer $version done"
}

main "$@"
