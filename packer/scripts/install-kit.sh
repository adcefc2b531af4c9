#!/usr/bin/env bash
# Packer: put the kit at /opt/pfslab from the archive scripts/images made, check it
# against its manifest (the image digest is computed over the same lines), install
# cloud-init and jq, and write /etc/pfslab/image.json.
#
# Environment: PFSLAB_IMAGE_JSON (the build's facts, JSON, from builds.pkr.hcl).
#
#   install-kit.sh sync DIGEST ARCHIVE_SHA256
#                                 only check, unpack and verify (PFSLAB_KIT_ARCHIVE): how
#                                 lab-up brings a node's kit in step with the checkout
#                                 (scripts/lib/login.sh). The archive's sha256 comes from
#                                 the kit's machine on the command line, apart from the
#                                 archive, and is checked before anything is unpacked.
#
# Either way the archive is unpacked into a staging folder beside the kit, checked there
# against the manifest (every file as listed, nothing unlisted), and only then moved in:
# a kit that fails a check is never installed, not even in part.
set -euo pipefail

ARCHIVE=${PFSLAB_KIT_ARCHIVE:-/tmp/pfslab-kit.tar.gz}
KIT=${KIT:-/opt/pfslab}
IMAGE_JSON=/etc/pfslab/image.json

fail() {
  echo "install-kit: $*" >&2
  exit 2
}

# The archive as the kit's machine sent it, or nothing is unpacked.
check_archive() {
  local want=$1 have
  [[ -s $ARCHIVE ]] || fail "$ARCHIVE is missing (the file provisioner copies it)"
  [[ -n $want ]] || return 0
  have=$(sha256sum <"$ARCHIVE")
  have=${have%% *}
  if [[ $have != "$want" ]]; then
    rm -f "$ARCHIVE"
    fail "$ARCHIVE hashes to $have, not $want (the sha256 the kit's machine sent): refused, nothing unpacked"
  fi
}

# Unpack into a staging folder next to the kit (same file system: the moves are renames);
# prints its path. Owners, setuid bits and links outside it are not taken from the archive.
unpack() {
  local stage
  # The kit is public (755/644); the staging folder itself is mktemp's 700.
  umask 022
  mkdir -p "$KIT"
  stage=$(mktemp -d "$(dirname "$KIT")/.pfslab-stage.XXXXXX")
  if ! tar -xzf "$ARCHIVE" -C "$stage" --no-same-owner --no-same-permissions; then
    rm -rf "$stage"
    fail "could not unpack $ARCHIVE"
  fi
  rm -f "$ARCHIVE"
  echo "$stage"
}

# Every file as the manifest says, nothing the manifest does not list, and the
# manifest's own sha256 is the digest. Usage: verify DIGEST DIR
verify() {
  local want=$1 dir=$2 have
  [[ -f $dir/.pfslab-manifest ]] || fail "the kit has no .pfslab-manifest"
  have=$(sha256sum <"$dir/.pfslab-manifest")
  have=${have%% *}
  [[ $have == "$want" ]] || fail "the kit's manifest hashes to $have, not the image digest $want"
  (cd "$dir" && awk '{print $1 "  " $3}' .pfslab-manifest | sha256sum --quiet --strict -c -) ||
    fail "files under $dir differ from the manifest (listed above)"
}

# The staged kit checked, then moved in. Replaces only what the archive carries; anything
# else under /opt/pfslab (a Spack prefix from an earlier toolchain run) stays.
install_staged() {
  local want=$1 stage=$2 entry extra
  [[ -d $stage && $stage == "$(dirname "$KIT")"/.pfslab-stage.* ]] || fail "no staged kit to install ($stage)"
  extra=$(cd "$stage" && find . -mindepth 1 ! -type d | sed 's|^\./||' |
    awk 'NR == FNR {listed[$3]; next} !($0 in listed) && $0 != ".pfslab-manifest"' .pfslab-manifest - |
    LC_ALL=C sort | head -n 3 | paste -sd' ' -)
  if [[ -n $extra ]]; then
    rm -rf "$stage"
    fail "the kit archive holds files its manifest does not list ($extra); refused"
  fi
  (verify "$want" "$stage") || {
    rm -rf "$stage"
    exit 2
  }
  for entry in "$stage"/* "$stage"/.pfslab-manifest; do
    rm -rf "${KIT:?}/$(basename "$entry")"
    mv "$entry" "$KIT/"
  done
  rmdir "$stage"
  verify "$want" "$KIT"
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
  local digest stage
  if [[ ${1:-} == sync ]]; then
    [[ ${2:-} =~ ^[0-9a-f]{64}$ && ${3:-} =~ ^[0-9a-f]{64}$ ]] || fail "usage: install-kit.sh sync DIGEST ARCHIVE_SHA256 (each 64 hex digits)"
    check_archive "$3"
    stage=$(unpack)
    install_staged "$2" "$stage"
    return 0
  fi
  [[ -n ${PFSLAB_IMAGE_JSON:-} ]] || fail "PFSLAB_IMAGE_JSON is not set"
  digest=$(sed -n 's/.*"digest": *"\([0-9a-f]\{64\}\)".*/\1/p' <<<"$PFSLAB_IMAGE_JSON")
  [[ -n $digest ]] || fail "PFSLAB_IMAGE_JSON has no digest"
  check_archive ""
  stage=$(unpack)
  install_staged "$digest" "$stage"
  # The kit's own package helper from here on (apt or dnf, lists refreshed on demand).
  # shellcheck source=scripts/lib/common.sh
  source "$KIT/scripts/lib/common.sh"
  # shellcheck source=scripts/lib/pkg.sh
  source "$KIT/scripts/lib/pkg.sh"
  PFSLAB_LOG_TAG=install-kit
  pkg_install jq cloud-init
  sshd_keys_only
  mkdir -p "$(dirname "$IMAGE_JSON")"
  jq --arg kit "$KIT" --argjson files "$(wc -l <"$KIT/.pfslab-manifest")" \
    '. + {kit_dir: $kit, kit_files: $files, installed: []}' <<<"$PFSLAB_IMAGE_JSON" >"$IMAGE_JSON"
  chmod 644 "$IMAGE_JSON"
  log "wrote $IMAGE_JSON"
}

main "$@"
