#!/usr/bin/env bash
# Packer: put the kit at /opt/pfslab from the archive scripts/images made, check it
# against its manifest (the image digest is computed over the same lines), install
# cloud-init and jq, and write /etc/pfslab/image.json.
#
# Environment: PFSLAB_IMAGE_JSON (the build's facts, JSON, from builds.pkr.hcl).
#
#   install-kit.sh sync DIGEST    only unpack and verify (PFSLAB_KIT_ARCHIVE): how lab-up
#                                 brings a login node's kit in step with the checkout
#                                 (scripts/lib/login.sh), with the same checks.
set -euo pipefail

ARCHIVE=${PFSLAB_KIT_ARCHIVE:-/tmp/pfslab-kit.tar.gz}
KIT=${KIT:-/opt/pfslab}
IMAGE_JSON=/etc/pfslab/image.json

fail() {
  echo "install-kit: $*" >&2
  exit 2
}

unpack() {
  local tmp entry
  [[ -s $ARCHIVE ]] || fail "$ARCHIVE is missing (the file provisioner copies it)"
  tmp=$(mktemp -d)
  tar -xzf "$ARCHIVE" -C "$tmp" --no-same-owner
  mkdir -p "$KIT"
  # Replace only what the archive carries; anything else under /opt/pfslab (a Spack
  # prefix from an earlier toolchain run) stays.
  for entry in "$tmp"/* "$tmp"/.pfslab-manifest; do
    rm -rf "${KIT:?}/$(basename "$entry")"
    mv "$entry" "$KIT/"
  done
  rmdir "$tmp"
  rm -f "$ARCHIVE"
}

# Every file as the manifest says, and the manifest's own sha256 is the digest.
verify() {
  local want=$1 have
  have=$(sha256sum <"$KIT/.pfslab-manifest")
  have=${have%% *}
  [[ $have == "$want" ]] || fail "the kit's manifest hashes to $have, not the image digest $want"
  (cd "$KIT" && awk '{print $1 "  " $3}' .pfslab-manifest | sha256sum --quiet --strict -c -) ||
    fail "files under $KIT differ from the manifest (listed above)"
  echo "install-kit: $(wc -l <"$KIT/.pfslab-manifest") kit files at $KIT match digest $want"
}

# The kit logs in to its nodes with the lab's key only: no password, no keyboard-
# interactive, root by key only, whatever the source image's sshd_config says (before
# cloud-init's ssh_pwauth: false, and for existing hosts that never run cloud-init).
sshd_keys_only() {
  mkdir -p /etc/ssh/sshd_config.d
  printf '%s\n' '# Written by pfslab (packer/scripts/install-kit.sh): keys only.' \
    'PasswordAuthentication no' 'KbdInteractiveAuthentication no' 'PermitRootLogin prohibit-password' \
    >/etc/ssh/sshd_config.d/50-pfslab.conf
  chmod 644 /etc/ssh/sshd_config.d/50-pfslab.conf
}

main() {
  local digest
  if [[ ${1:-} == sync ]]; then
    [[ -n ${2:-} ]] || fail "usage: install-kit.sh sync DIGEST"
    unpack
    verify "$2"
    return 0
  fi
  [[ -n ${PFSLAB_IMAGE_JSON:-} ]] || fail "PFSLAB_IMAGE_JSON is not set"
  unpack
  # The kit's own package helper from here on (apt or dnf, lists refreshed on demand).
  # shellcheck source=scripts/lib/common.sh
  source "$KIT/scripts/lib/common.sh"
  # shellcheck source=scripts/lib/pkg.sh
  source "$KIT/scripts/lib/pkg.sh"
  PFSLAB_LOG_TAG=install-kit
  pkg_install jq cloud-init
  sshd_keys_only
  digest=$(jq -er .digest <<<"$PFSLAB_IMAGE_JSON")
  verify "$digest"
  mkdir -p "$(dirname "$IMAGE_JSON")"
  jq --arg kit "$KIT" --argjson files "$(wc -l <"$KIT/.pfslab-manifest")" \
    '. + {kit_dir: $kit, kit_files: $files, installed: []}' <<<"$PFSLAB_IMAGE_JSON" >"$IMAGE_JSON"
  chmod 644 "$IMAGE_JSON"
  log "wrote $IMAGE_JSON"
}

main "$@"
