#!/usr/bin/env bash
# Packer, amazon-ebs only: AWS's EFA installer (the efa kernel driver through DKMS,
# rdma-core, libfabric with the efa provider, under /opt/amazon/efa). Debian's cloud
# kernel has no efa module. PFSLAB_EFA_INSTALLER_VERSION empty skips it.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source /opt/pfslab/scripts/lib/common.sh
# shellcheck source=scripts/lib/pkg.sh
source /opt/pfslab/scripts/lib/pkg.sh
PFSLAB_LOG_TAG=efa

URL_BASE=https://efa-installer.amazonaws.com

main() {
  local version=${PFSLAB_EFA_INSTALLER_VERSION:-} tmp
  if [[ -z $version ]]; then
    log "no EFA installer version given; skipped"
    return 0
  fi
  if [[ -e /opt/amazon/efa/bin/fi_info ]] && lsmod 2>/dev/null | grep -q '^efa '; then
    log "EFA software already present; nothing to do"
    return 0
  fi
  pkg_install curl ca-certificates tar "linux-headers-$(uname -r)" dkms
  tmp=$(mktemp -d)
  log "downloading aws-efa-installer-$version"
  curl -fsSL --retry 3 -o "$tmp/efa.tar.gz" "$URL_BASE/aws-efa-installer-$version.tar.gz" ||
    die "cannot download $URL_BASE/aws-efa-installer-$version.tar.gz"
  tar -xzf "$tmp/efa.tar.gz" -C "$tmp"
  (cd "$tmp/aws-efa-installer" && ./efa_installer.sh -y) || die "efa_installer.sh failed (its output is above)"
  rm -rf "$tmp"
  log "EFA installer $version done"
}

main "$@"
