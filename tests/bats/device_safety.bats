#!/usr/bin/env bats
# A role never erases a device it was not given (scripts/lib/roles.sh claim_device):
# real loop devices that carry a file system, a partition table, an LVM label, an md
# superblock or a mount are refused in one line naming the device and what is on it,
# and not a byte of them changes; a device the lab lists in wipe_devices is used; the
# disk of the running system is refused even when listed, and never discovered.

load helpers

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  need_loops
  export PFSLAB_ROOT=$REPO
  # shellcheck source=scripts/lib/common.sh
  source "$REPO/scripts/lib/common.sh"
  # shellcheck source=scripts/lib/roles.sh
  source "$REPO/scripts/lib/roles.sh"
  wipe_config '[]'
}

teardown() {
  [[ -n ${MNT:-} ]] && umount "$MNT" 2>/dev/null || true
  [[ -n ${MD:-} ]] && mdadm --stop "$MD" >/dev/null 2>&1 || true
  drop_loops
}

# A node config whose wipe list is $1 (a JSON array).
wipe_config() {
  export PFSLAB_NODE_CONFIG=$BATS_TEST_TMPDIR/node.json
  jq -n --argjson w "$1" '{node: {name: "n0"}} + (if ($w | length) > 0 then {wipe_devices: $w} else {} end)' >"$PFSLAB_NODE_CONFIG"
}

digest() { sha256sum "$1" | cut -d' ' -f1; }

# claim_device must refuse DEV in one line naming it and $1, and leave it unchanged.
assert_refused() {
  local before
  before=$(digest "$DEV")
  run claim_device "$DEV" "create xfs on it"
  assert_failure 2
  assert_equal "${#lines[@]}" 1
  assert_output --partial "$DEV holds"
  assert_output --partial "$1"
  assert_output --partial "refusing to create xfs on it"
  run mkfs_once "$DEV" xfs
  assert_failure 2
  assert_equal "$(digest "$DEV")" "$before"
}

@test "a blank device is claimed without a word" {
  new_loop 64M
  run claim_device "$DEV" "create xfs on it"
  assert_success
  assert_output ""
}

@test "a device with a file system is refused and unchanged" {
  new_loop 64M
  mkfs.ext4 -q "$DEV"
  assert_refused "signatures (ext4)"
}

@test "a device with a partition table is refused and unchanged" {
  command -v sgdisk >/dev/null || skip "sgdisk (gdisk) is missing"
  new_loop 64M
  sgdisk -o -n 1:0:+8M "$DEV" >/dev/null 2>&1
  sync
  partx -u "$DEV" 2>/dev/null || true
  assert_refused "gpt"
}

@test "a device with an LVM label is refused and unchanged" {
  command -v pvcreate >/dev/null || skip "pvcreate (lvm2) is missing"
  new_loop 64M
  pvcreate -y -q "$DEV" >/dev/null 2>&1 || skip "pvcreate cannot label a loop device here"
  assert_refused "LVM2_member"
}

@test "a device with an md superblock is refused and unchanged" {
  new_loop 64M
  if command -v mdadm >/dev/null && [[ -e /proc/mdstat ]]; then
    local first=$DEV
    new_loop 64M
    MD=/dev/md/pfslab-test
    mdadm --create "$MD" --run --level=1 --raid-devices=2 --metadata=1.2 "$first" "$DEV" >/dev/null 2>&1
    mdadm --stop "$MD" >/dev/null 2>&1
    MD=
  else
    # No md driver in this kernel (or no mdadm): the superblock mdadm would write.
    python3 "$BATS_TEST_DIRNAME/fixtures/write-md-superblock.py" "$DEV"
    sync
  fi
  assert_refused "linux_raid_member"
}

@test "a mounted device is refused and unchanged" {
  new_loop 64M
  # Nothing but the kit may change the device while it is mounted: no inode tables or
  # journal left for the kernel to zero in the background (ext4lazyinit changed the
  # digest once in CI), and mounted read-only.
  mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$DEV"
  MNT=$BATS_TEST_TMPDIR/mnt
  mkdir -p "$MNT"
  mount -o ro "$DEV" "$MNT"
  before=$(digest "$DEV")
  run claim_device "$DEV" "create xfs on it"
  assert_failure 2
  assert_output --partial "mounted file systems ($MNT)"
  assert_equal "$(digest "$DEV")" "$before"
}

@test "a device the lab lists in wipe_devices is used" {
  new_loop 64M
  mkfs.ext4 -q "$DEV"
  wipe_config "[\"$DEV\"]"
  run claim_device "$DEV" "create xfs on it"
  assert_success
  assert_output --partial "the lab lists it in wipe_devices"
  # Listed by another name of the same device (a symlink, as /dev/disk/by-id is).
  ln -s "$DEV" "$BATS_TEST_TMPDIR/by-id-disk"
  wipe_config "[\"$BATS_TEST_TMPDIR/by-id-disk\"]"
  run claim_device "$DEV" "create xfs on it"
  assert_success
  # Another device's listing does not cover it.
  wipe_config '["/dev/loop-not-this-one"]'
  run claim_device "$DEV" "create xfs on it"
  assert_failure 2
}

@test "the disk of the running system is refused even when listed, and never discovered" {
  local root
  root=$(system_disks | head -n 1)
  [[ -n $root ]] || skip "this machine's root is not on a block device (findmnt shows $(findmnt -rno SOURCE /))"
  wipe_config "[\"$root\"]"
  DEV=$root
  run claim_device "$root" "create xfs on it"
  assert_failure 2
  assert_output --partial "$root holds the running system"
  # NVMe discovery by NUMA node leaves the system's disk out.
  PFSLAB_SYSROOT=$BATS_TEST_TMPDIR/sys
  local n
  for n in 0 1; do
    mkdir -p "$PFSLAB_SYSROOT/sys/class/nvme/nvme$n/device"
    echo 0 >"$PFSLAB_SYSROOT/sys/class/nvme/nvme$n/device/numa_node"
  done
  system_disks() { echo /dev/nvme0n1; }
  run nvme_on_numa 0
  assert_success
  assert_output /dev/nvme1n1
}

# A mounted device the lab lists in wipe_devices: still refused, and so is reformatting
# it through nvme_set_lba. No device is attached or mounted here: a free loop node is a
# block device, and lsblk reports a mount on it (the mount's own detection is the real
# mount test above).
@test "a mounted device is refused even when listed in wipe_devices, for mkfs and for nvme format" {
  DEV=$(losetup -f)
  [[ -b $DEV ]] || skip "no free loop device node"
  lsblk() {
    if [[ $* == "-nro MOUNTPOINTS $DEV" ]]; then echo /mnt/in-use; else blank_lsblk "$@"; fi
  }
  export PFSLAB_NODE_CONFIG=$BATS_TEST_TMPDIR/node.json
  jq -n --arg d "$DEV" '{node: {name: "n0"}, wipe_devices: [$d]}' >"$PFSLAB_NODE_CONFIG"
  run claim_device "$DEV" "create xfs on it"
  assert_failure 2
  assert_output "[pfslab] error: $DEV holds mounted file systems (/mnt/in-use); refusing to create xfs on it: it is in use (wipe_devices never covers the system's disk or a mounted device; unmount it first)"
  # nvme format: the wanted LBA format is not in use, so it would format; it must not.
  nvme_lbaf() { echo "1 0"; }
  nvme() { echo "nvme $*" >>"$BATS_TEST_TMPDIR/nvme.log"; }
  run nvme_set_lba "$DEV" 4096
  assert_failure 2
  assert_output --partial "refusing to reformat it to 4096-byte LBAs: it is in use"
  [ ! -e "$BATS_TEST_TMPDIR/nvme.log" ]
}

# lsblk as it answers for a blank, unmounted whole disk $DEV (a free loop node itself
# has no media: the real lsblk finds nothing there and fails).
blank_lsblk() {
  case "$*" in
    "-nsro NAME,TYPE $DEV" | "-nro NAME,TYPE $DEV") echo "${DEV#/dev/} disk" ;;
    "-nro MOUNTPOINTS $DEV") echo ;;
    *) echo "lsblk: unexpected arguments: $*" >&2; return 64 ;;
  esac
}

# A probe that fails says nothing about the device: the claim is refused in one line
# naming the device and why, even when the lab lists it in wipe_devices, and nothing
# is made on it. No device is attached: a free loop node is a block device, and the
# probes are stand-ins.
assert_cannot_tell() {
  local why=$1
  wipe_config "[\"$DEV\"]"
  mkfs.xfs() { echo "mkfs.xfs $*" >>"$BATS_TEST_TMPDIR/mkfs.log"; }
  run claim_device "$DEV" "create xfs on it"
  assert_failure 2
  assert_output "[pfslab] error: cannot tell whether $DEV holds data: $why"
  run mkfs_once "$DEV" xfs
  assert_failure 2
  assert_output --partial "cannot tell whether $DEV holds data"
  [ ! -e "$BATS_TEST_TMPDIR/mkfs.log" ]
}

free_loop_node() {
  DEV=$(losetup -f)
  [[ -b $DEV ]] || skip "no free loop device node"
  blkid() { return 2; }
  wipefs() { return 0; }
}

@test "a device whose mounts cannot be listed (util-linux without MOUNTPOINTS) is refused, not taken as blank" {
  free_loop_node
  lsblk() {
    if [[ $* == *MOUNTPOINTS* ]]; then echo "lsblk: unknown column: MOUNTPOINTS" >&2; return 1; fi
    blank_lsblk "$@"
  }
  assert_cannot_tell "'lsblk -nro MOUNTPOINTS $DEV' failed: lsblk: unknown column: MOUNTPOINTS"
}

@test "a device whose signatures cannot be read is refused, not taken as blank" {
  free_loop_node
  lsblk() { blank_lsblk "$@"; }
  wipefs() { echo "wipefs: error: $DEV: probing initialization failed: Permission denied" >&2; return 1; }
  assert_cannot_tell "'wipefs --noheadings --output TYPE $DEV' failed: wipefs: error: $DEV: probing initialization failed: Permission denied"
}

@test "a device whose partitions cannot be listed (lsblk finds no such device) is refused" {
  free_loop_node
  lsblk() { [[ $* != "-nro NAME,TYPE $DEV" ]] || return 32; blank_lsblk "$@"; }
  assert_cannot_tell "'lsblk -nro NAME,TYPE $DEV' failed: exit status 32"
}

@test "a file system probe that fails is refused, not taken as no file system" {
  free_loop_node
  lsblk() { blank_lsblk "$@"; }
  blkid() { return 4; }
  mkfs.xfs() { echo "mkfs.xfs $*" >>"$BATS_TEST_TMPDIR/mkfs.log"; }
  run mkfs_once "$DEV" xfs
  assert_failure 2
  assert_output "[pfslab] error: cannot tell whether $DEV holds data: 'blkid -p -s TYPE -o value $DEV' failed (exit status 4)"
  [ ! -e "$BATS_TEST_TMPDIR/mkfs.log" ]
}

@test "a device is claimed when every probe answers blank" {
  free_loop_node
  lsblk() { blank_lsblk "$@"; }
  run claim_device "$DEV" "create xfs on it"
  assert_success
  assert_output ""
}
