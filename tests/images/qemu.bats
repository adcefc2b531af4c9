#!/usr/bin/env bats
# The qemu image for real: build the server image with Packer (mmdebstrap base, role
# installs inside the VM) and boot it until cloud-init's boot-finished. Slow (about
# 15 minutes under TCG here, less with KVM) and it needs root and the Debian mirror,
# so it runs only with PFSLAB_TEST_IMAGES=1:
#
#   PFSLAB_TEST_IMAGES=1 bats tests/images
#
# FAMILY (default ceph) picks the role set, as for `make images`.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

KIT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  [[ ${PFSLAB_TEST_IMAGES:-0} == 1 ]] || skip "slow (Packer build + boot under TCG): set PFSLAB_TEST_IMAGES=1"
  [[ $(id -u) -eq 0 ]] || skip "needs root (mmdebstrap --mode=root)"
}

# The image the first test built (scripts/images prints its qcow2 on stdout).
built_image() {
  [[ -s $BATS_FILE_TMPDIR/image ]] || skip "no image: the build test failed or did not run"
  cat "$BATS_FILE_TMPDIR/image"
}

@test "make images TARGET=qemu ROLE=server: a qcow2 with its kernel, initrd and image.json" {
  run bash -c "'$KIT/scripts/images' qemu server 2>'$BATS_FILE_TMPDIR/images.log'"
  [[ $status -eq 0 ]] || fail "scripts/images failed: $(tail -n 5 "$BATS_FILE_TMPDIR/images.log")"
  local qcow2=$output dir
  [[ $qcow2 == "$KIT"/build/images/pfslab-server-${FAMILY:-ceph}-*/*.qcow2 ]] || fail "unexpected output: $qcow2"
  echo "$qcow2" >"$BATS_FILE_TMPDIR/image"
  dir=$(dirname "$qcow2")
  [[ -s $dir/initrd && -s $dir/image.json ]]
  # The kernel beside the disk is a bzImage ("HdrS" at 0x202).
  [[ $(od -An -c -j 514 -N 4 "$dir/vmlinuz" | tr -d ' ') == HdrS ]]
  run jq -r '.role + " " + .family + " " + (.digest | .[0:12])' "$dir/image.json"
  assert_output "server ${FAMILY:-ceph} ${dir##*-}"
  run qemu-img info --output=json "$qcow2"
  assert_success
  assert_output --partial '"format": "qcow2"'
  run grep -E 'built pfslab-server-.* in [0-9]+s with (kvm|tcg)' "$BATS_FILE_TMPDIR/images.log"
  assert_success
}

@test "scripts/image-boot-test: the image boots to cloud-init's boot-finished with the kit in place" {
  local qcow2 dir
  qcow2=$(built_image)
  dir=$(dirname "$qcow2")
  run "$KIT/scripts/image-boot-test" "$dir"
  assert_success
  assert_output --regexp "boot-finished after [0-9]+s \((kvm|tcg)\): cloud-init status=done errors=0 marker=yes"
  assert_output --partial "common health tuning: tuning@pfslab-boot-test: ok (2 sysctls, THP madvise)"
  assert_output --partial "digest=$(jq -r .digest "$dir/image.json")"
  # The overlay and the seed are gone; the image is untouched.
  run find "$KIT/build/images" -maxdepth 1 -name '.boot-test.*'
  assert_output ""
}

@test "a second build with the same kit does nothing" {
  local qcow2
  qcow2=$(built_image)
  [[ $(dirname "$qcow2") == *-$("$KIT/scripts/image-digest" | cut -c1-12) ]] ||
    skip "the kit changed since the build (another edit): the digest, and so the image, differ"
  run "$KIT/scripts/images" qemu server
  assert_success
  assert_output --partial "is up to date"
}
