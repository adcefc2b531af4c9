# shellcheck shell=bash
# Helpers of the image tooling (scripts/images, scripts/lib/login.sh,
# scripts/lib/hosts-images.sh): the kit's file list and digest, the kit archive Packer
# copies into images and QEMU's accelerator (calls of pfslab/images), and the Debian base
# of the qemu images.
# Sourced after common.sh; defines functions and constants only.

IMAGES_DIR=${PFSLAB_IMAGES_DIR:-$PFSLAB_ROOT/build/images}

# ---- the Packer templates, the kit's files, digest and archive -------------------------
# pfslab/images (kit.py, templates.py) does the work; these names stay for the scripts
# that call them (scripts/images, scripts/lib/login.sh, scripts/lib/hosts-images.sh).
# Each fails as die does: the command's one line, then exit.

# The kit's command of the checkout these scripts are in, not PFSLAB_ROOT's: a test
# may point PFSLAB_ROOT at a bare copy of a kit, which `pfslab image` then reads.
PFSLAB_IMAGE_CLI=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.venv/bin/pfslab

pfslab_image() {
  [[ -x $PFSLAB_IMAGE_CLI ]] || die "the kit's command $PFSLAB_IMAGE_CLI is missing; run 'make deps' first"
  PFSLAB_LOG_TAG=${PFSLAB_LOG_TAG:-pfslab} "$PFSLAB_IMAGE_CLI" image "$@" || exit $?
}

# packer_templates DIR: the template directory Packer gets (pfslab/images/templates.py).
packer_templates() { pfslab_image templates "$1"; }
# The kit files an image carries, one per line, sorted byte-wise (pfslab/images/kit.py).
image_files() { pfslab_image digest --files; }
# "<sha256>  <mode>  <path>" per file: what the digest is taken over.
image_manifest() { pfslab_image digest --manifest; }
image_digest() { pfslab_image digest; }
# kit_archive OUT.tar.gz: the digest's files and the manifest, owned by root.
kit_archive() { pfslab_image kit-archive "$1"; }

# ---- the Debian base of the qemu images --------------------------------------------------

BASE_SUITE=bookworm
BASE_MIRROR=http://deb.debian.org/debian
BASE_SECURITY=http://deb.debian.org/debian-security
BASE_SIZE_MIB=3072
# A minimal Debian cloud system: a kernel with virtio, systemd, SSH, cloud-init and
# its NoCloud/ifupdown needs. Roles install the rest (apt works at build time).
BASE_PACKAGES=(linux-image-cloud-amd64 initramfs-tools systemd-sysv udev dbus openssh-server
  cloud-init cloud-guest-utils ifupdown isc-dhcp-client netbase iproute2 ca-certificates sudo
  procps e2fsprogs jq python3 less)
ROOT_LABEL=pfslab-root
KERNEL_APPEND="root=LABEL=$ROOT_LABEL ro console=ttyS0 net.ifnames=0"

# The base's cache key: its recipe (suite, mirrors, packages, size) and the code
# that builds it, so a change to either builds a new base.
base_digest() {
  local sum
  sum=$({
    printf '%s\n' "$BASE_SUITE" "$BASE_MIRROR" "$BASE_SECURITY" "$BASE_SIZE_MIB" "$KERNEL_APPEND" "${BASE_PACKAGES[@]}"
    declare -f build_base base_tree_fixups assemble_disk
  } | sha256sum)
  echo "${sum%% *}"
}

# Build the base once: build/images/base-<digest>.qcow2 with its kernel and initrd
# beside it (.vmlinuz, .initrd; qemu boots them directly). Prints the qcow2 path.
build_base() {
  local digest prefix tmp start
  digest=$(base_digest)
  prefix=$IMAGES_DIR/base-${digest:0:16}
  if [[ -s $prefix.qcow2 && -s $prefix.vmlinuz && -s $prefix.initrd ]]; then
    log "base image $prefix.qcow2 is up to date"
    echo "$prefix.qcow2"
    return 0
  fi
  require_root "building the Debian base (mmdebstrap --mode=root, mkfs.ext4 -d)"
  require_cmd mmdebstrap mkfs.ext4 sfdisk qemu-img
  mkdir -p "$IMAGES_DIR"
  tmp=$(mktemp -d "$IMAGES_DIR/.base.XXXXXX")
  start=$SECONDS
  log "building the Debian $BASE_SUITE base with mmdebstrap (a few minutes; log: $tmp/mmdebstrap.log)"
  if ! mmdebstrap --variant=minbase --mode=root --format=directory \
    --include="$(
      IFS=,
      echo "${BASE_PACKAGES[*]}"
    )" "$BASE_SUITE" "$tmp/root" \
    "deb $BASE_MIRROR $BASE_SUITE main" "deb $BASE_MIRROR $BASE_SUITE-updates main" \
    "deb $BASE_SECURITY $BASE_SUITE-security main" >"$tmp/mmdebstrap.log" 2>&1; then
    tail -n 5 "$tmp/mmdebstrap.log" >&2
    rm -rf "$tmp"
    die "mmdebstrap failed (the last lines are above)"
  fi
  base_tree_fixups "$tmp/root"
  cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
  cp "$tmp"/root/boot/initrd.img-* "$tmp/initrd"
  assemble_disk "$tmp/root" "$tmp/disk.raw"
  qemu-img convert -c -O qcow2 "$tmp/disk.raw" "$tmp/base.qcow2"
  mv "$tmp/vmlinuz" "$prefix.vmlinuz"
  mv "$tmp/initrd" "$prefix.initrd"
  mv "$tmp/base.qcow2" "$prefix.qcow2"
  rm -rf "$tmp"
  log "base image $prefix.qcow2 built in $((SECONDS - start))s"
  echo "$prefix.qcow2"
}

# What every machine booted from the base must not share, and how it finds its root.
base_tree_fixups() {
  local root=$1
  rm -f "$root"/etc/ssh/ssh_host_* "$root/etc/resolv.conf"
  : >"$root/etc/machine-id"
  rm -f "$root/var/lib/dbus/machine-id"
  printf 'LABEL=%s / ext4 defaults,errors=remount-ro 0 1\n' "$ROOT_LABEL" >"$root/etc/fstab"
  printf 'localhost\n' >"$root/etc/hostname"
  # Interface names are eth0... (net.ifnames=0) on every hypervisor and bare metal.
  mkdir -p "$root/etc/cloud/cloud.cfg.d"
  printf '%s\n' '# pfslab base: NoCloud (seed ISO) first, then the usual clouds.' \
    'datasource_list: [NoCloud, ConfigDrive, OpenStack, Ec2, Azure, GCE, None]' \
    >"$root/etc/cloud/cloud.cfg.d/90-pfslab-datasources.cfg"
}

# A raw disk with one bootable partition (1 MiB aligned) holding ext4 made from a
# directory: no loop devices, no mounts, so it works in a container.
assemble_disk() {
  local root=$1 disk=$2 offset=1048576
  truncate -s "${BASE_SIZE_MIB}M" "$disk"
  printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$disk"
  mkfs.ext4 -q -F -L "$ROOT_LABEL" -d "$root" -E offset=$offset "$disk" "$(((BASE_SIZE_MIB - 1) * 1024))k"
}

# ---- QEMU ------------------------------------------------------------------------------

# kvm when /dev/kvm can really run a guest, else tcg (pfslab/images/qemu.py: the probe
# boots the kernel until it panics). PFSLAB_QEMU_ACCEL=kvm|tcg skips the probe.
# Usage: qemu_accel KERNEL
qemu_accel() { pfslab_image accel "$1"; }

# The CPU model for an accelerator: the host's under KVM, everything TCG emulates
# (SSE4.2, AVX2...) otherwise.
qemu_cpu() { if [[ $1 == kvm ]]; then echo host; else echo max; fi; }
