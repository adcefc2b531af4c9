#!/usr/bin/env bats
# shellcheck disable=SC2016
# Downloads the kit runs as root are checked against a pinned value before they are
# unpacked: AWS's EFA installer (packer/scripts/efa.sh) against its sha256. A fake curl
# serves a tarball made here; a mismatching one is refused with one line and never
# unpacked, a matching one is installed. (The BeeGFS key: roles_beegfs.bats.)

load helpers

setup() {
  sandbox
  local t
  for t in tar gzip sha256sum; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  # The tarball served: an installer that only leaves a mark that it ran.
  mkdir -p "$BATS_TEST_TMPDIR/src/aws-efa-installer"
  printf '#!/bin/bash\necho "$*" >"$SHIM_STATE/efa-installer-ran"\n' >"$BATS_TEST_TMPDIR/src/aws-efa-installer/efa_installer.sh"
  chmod +x "$BATS_TEST_TMPDIR/src/aws-efa-installer/efa_installer.sh"
  tar -czf "$SHIM_STATE/served.tar.gz" -C "$BATS_TEST_TMPDIR/src" aws-efa-installer
  SERVED_SHA=$(sha256sum "$SHIM_STATE/served.tar.gz" | cut -d' ' -f1)
  shim curl 'while (($#)); do [[ $1 == -o ]] && cp "$SHIM_STATE/served.tar.gz" "$2"; shift; done'
  shim dpkg-query 'echo "install ok installed"'
  shim uname 'echo 6.1.0-test-cloud-amd64'
  # The pin the image build passes (targets/aws/image.pkr.hcl).
  PINNED=$(sed -n '/^variable "aws_efa_installer_sha256"/,/^}/s/^ *default *= *"\([0-9a-f]*\)"$/\1/p' "$KIT/targets/aws/image.pkr.hcl")
}

efa() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$BATS_TEST_TMPDIR" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" \
    TMPDIR="$BATS_TEST_TMPDIR" PFSLAB_KIT="$KIT" PFSLAB_EFA_INSTALLER_VERSION=1.38.0 PFSLAB_EFA_INSTALLER_SHA256="$1" \
    "$KIT/packer/scripts/efa.sh"
}

@test "EFA installer: the image build pins 1.38.0 with a sha256 and passes it to efa.sh" {
  [[ $PINNED =~ ^[0-9a-f]{64}$ ]]
  grep -q 'default *= *"1.38.0"' "$KIT/targets/aws/image.pkr.hcl"
  grep -qF '"PFSLAB_EFA_INSTALLER_SHA256=${var.aws_efa_installer_sha256}"' "$KIT/packer/builds.pkr.hcl"
}

@test "EFA installer: a tarball whose sha256 is not the pinned one is refused in one line and never unpacked" {
  efa "$PINNED"
  assert_failure 2
  assert_line --index 1 "[efa] error: aws-efa-installer-1.38.0.tar.gz: sha256 mismatch: expected $PINNED (targets/aws/image.pkr.hcl, aws_efa_installer_sha256), got $SERVED_SHA; not used"
  [ "${#lines[@]}" -eq 2 ] # "downloading ...", then the refusal
  [ ! -e "$SHIM_STATE/efa-installer-ran" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 2 -name 'aws-efa-installer' -not -path '*/src/*')" ]
  run calls curl
  assert_output --regexp "^curl -fsSL --retry 3 -o $BATS_TEST_TMPDIR/tmp\.[A-Za-z0-9]+/efa\.tar\.gz https://efa-installer\.amazonaws\.com/aws-efa-installer-1\.38\.0\.tar\.gz\$"
}

@test "EFA installer: the tarball with the pinned sha256 is unpacked and installed" {
  efa "$SERVED_SHA"
  assert_success
  assert_line "[efa] aws-efa-installer-1.38.0.tar.gz: sha256 $SERVED_SHA as pinned"
  [ "$(cat "$SHIM_STATE/efa-installer-ran")" = "-y" ]
}

@test "EFA installer: a version with no sha256 pinned is refused before anything is downloaded" {
  efa ""
  assert_failure 2
  assert_output "[efa] error: aws-efa-installer-1.38.0.tar.gz: no sha256 pinned (targets/aws/image.pkr.hcl, aws_efa_installer_sha256); refusing an unverified download"
  [ -z "$(calls curl)" ]
}
