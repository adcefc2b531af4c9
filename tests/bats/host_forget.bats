#!/usr/bin/env bats
# shellcheck disable=SC2016
# "Hosts left as found" for the families the hosts lab cannot run here (BeeGFS, NFS):
# the roles' configure steps run as lab-up runs them on an existing host, against a
# scratch root whose /etc/fstab and /etc/mdadm/mdadm.conf already hold the host's own
# lines, on real loop devices (real mkfs, blkid, wipefs); then the stops and
# scripts/host-forget as lab-down runs them. The host's tree must be as before, byte for
# byte, and the devices blank. Mounts and services are the role tests' stand-ins
# (helpers.bash): no file system is mounted on this machine.

load helpers

setup() {
  [[ $(id -u) -eq 0 ]] || skip "needs root for loop devices"
  command -v losetup >/dev/null || skip "losetup (util-linux) is missing"
  LOOPS=()
  MDS=()
  sandbox
  common_shims
  # The devices are real: their file systems, UUIDs and signatures too.
  rm -f "$SHIMS/blkid" "$SHIMS/mkfs.ext4" "$SHIMS/mkfs.xfs"
  local t
  for t in blkid mkfs.ext4 mkfs.xfs wipefs lsblk comm chown tac rmdir; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  if command -v mdadm >/dev/null; then ln -sf "$(command -v mdadm)" "$SAFE/mdadm"; fi
  for t in beegfs-setup-meta beegfs-setup-storage exportfs; do shim "$t"; done
  BEEGFS_FPR=0683AF2B9AC5BC7D59B2D62340CE4E243CD50804
  echo "FPR $BEEGFS_FPR" >"$SHIM_STATE/served-key"
  shim curl 'while (($#)); do [[ $1 == -o ]] && cp "$SHIM_STATE/served-key" "$2"; shift; done'
  shim gpg 'awk "\$1 == \"FPR\" {print \"pub:-:4096:1:0000:::::::scESC:\"; print \"fpr:::::::::\" \$2 \":\"}" "${!#}"'
  shim dpkg-query 'exit 1'
  shim apt-get
  host_tree
}

teardown() {
  local md dev
  for md in "${MDS[@]}"; do mdadm --stop "$md" >/dev/null 2>&1 || true; done
  for dev in "${LOOPS[@]}"; do
    mdadm --zero-superblock "$dev" >/dev/null 2>&1 || true
    losetup -d "$dev" 2>/dev/null || true
  done
}

# A 1 GiB sparse loop device (XFS with the NFS role's stripe needs its 64 MiB log); its path goes to DEV, and
# the scratch root gets a link to it, as a host's /dev has it.
new_loop() {
  local img
  img=$(mktemp "$BATS_TEST_TMPDIR/disk.XXXXXX")
  truncate -s 1G "$img"
  DEV=$(losetup -f --show "$img")
  LOOPS+=("$DEV")
  ln -s "$DEV" "$ROOT$DEV"
}

# The existing host before lab-up: the host's own fstab (ending with a tab-separated line),
# mdadm.conf (mode 640), the folders a Debian host has; no /data, /export, /mnt.
host_tree() {
  mkdir -p "$ROOT"/etc/{apt/sources.list.d,beegfs,mdadm,systemd/system} "$ROOT"/var/lib "$ROOT/dev" \
    "$ROOT/sys/devices/system/node/node0"
  echo "0-3" >"$ROOT/sys/devices/system/node/node0/cpulist"
  echo "VERSION_CODENAME=bookworm" >"$ROOT/etc/os-release"
  printf '%s\n' "# /etc/fstab: static file system information." \
    "UUID=0b5e2c7a-root / ext4 errors=remount-ro 0 1" \
    "/dev/sdb1 /home xfs defaults,nofail 0 2" \
    "" \
    $'tmpfs\t/scratch\ttmpfs\tsize=1g\t0\t0' >"$ROOT/etc/fstab"
  chmod 644 "$ROOT/etc/fstab"
  printf '%s\n' "HOMEHOST <system>" "MAILADDR root" "ARRAY /dev/md/home metadata=1.2 UUID=11111111:22222222:33333333:44444444" \
    >"$ROOT/etc/mdadm/mdadm.conf"
  chmod 640 "$ROOT/etc/mdadm/mdadm.conf"
  printf '%s\n' "sysMgmtdHost =" "connInterfacesFile =" "logLevel = 2" | tee "$ROOT/etc/beegfs/beegfs-meta.conf" >"$ROOT/etc/beegfs/beegfs-storage.conf"
  echo "deb http://deb.debian.org/debian bookworm main" >"$ROOT/etc/apt/sources.list.d/debian.list"
  export HOME=$BATS_TEST_TMPDIR/home
  mkdir -p "$HOME/.ssh"
  echo "ssh-ed25519 AAAAuser user@desk" >"$HOME/.ssh/authorized_keys"
}

# Every path of the scratch root with its type, mode, owner, link target and, for a
# file, its sha256: two listings differ when anything of the host's did.
listing() {
  (cd "$ROOT" && find . -printf '%p %y %m %u:%g %l\n' | LC_ALL=C sort)
  (cd "$ROOT" && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k 2)
}

# The BeeGFS server (meta on META, storage on STORAGE: device lists as JSON) and the
# NFS server (on LUN) and client of one lab, all on this host.
configs() {
  BEEGFS=$(node_config beegfs.json ss0 ss 0 10.10.0.3 beegfs-meta beegfs-storage)
  jq --argjson meta "$1" --argjson stor "$2" '
    .filesystem.beegfs.servers = [{groups: ["ss"], id_base: 0,
      meta: ({devices: $meta, drives_per_target: ($meta | length)} + (if ($meta | length) > 1 then {raid: "1"} else {} end)),
      storage: {devices: $stor, drives_per_target: 1}}]' "$BEEGFS" >"$BEEGFS.new"
  mv "$BEEGFS.new" "$BEEGFS"
  NFS=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server nfs-client)
  jq --arg lun "$3" '.filesystem.nfs += {devices: [$lun], luns: 1, ha_pair: false} | del(.filesystem.nfs.ha)' "$NFS" >"$NFS.new"
  mv "$NFS.new" "$NFS"
}

lab_up() {
  local step
  for step in "$BEEGFS beegfs install meta" "$BEEGFS beegfs configure meta" "$BEEGFS beegfs configure storage" \
    "$NFS nfs configure server" "$NFS nfs start server" "$NFS nfs configure client" "$NFS nfs start client"; do
    # shellcheck disable=SC2086
    role $step
    assert_success
  done
}

lab_down() {
  local step
  for step in "$NFS nfs stop client" "$NFS nfs stop server" "$BEEGFS beegfs stop storage" "$BEEGFS beegfs stop meta"; do
    # shellcheck disable=SC2086
    role $step
    assert_success
  done
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$HOME" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" \
    PFSLAB_MOUNTS="$SHIM_STATE/mounts" PFSLAB_SYSROOT="$ROOT" \
    bash "$KIT/scripts/host-forget" lab-t "pfslab-inner lab=lab-t" /mnt/nfs /opt/pfslab
}

# What every test checks after lab-down: the host's tree as before, nothing mounted,
# every device the lab used without a signature.
assert_left_as_found() {
  local dev
  assert_equal "$(listing)" "$BEFORE"
  assert_equal "$(sha256sum <"$ROOT/etc/fstab")" "$FSTAB_SUM"
  assert_equal "$(sha256sum <"$ROOT/etc/mdadm/mdadm.conf")" "$MDADM_SUM"
  assert_equal "$(cat "$SHIM_STATE/mounts")" ""
  for dev in "${LOOPS[@]}"; do
    assert_equal "$(wipefs -n "$dev")" ""
  done
}

@test "lab-down on an existing host takes back the BeeGFS and NFS roles' fstab lines, files, folders and file systems: the host's files are as before" {
  new_loop && meta=$DEV
  new_loop && stor=$DEV
  new_loop && lun=$DEV
  configs "[\"$meta\"]" "[\"$stor\"]" "$lun"
  BEFORE=$(listing)
  FSTAB_SUM=$(sha256sum <"$ROOT/etc/fstab")
  MDADM_SUM=$(sha256sum <"$ROOT/etc/mdadm/mdadm.conf")
  lab_up
  # What lab-up wrote into the host's own files: nofail on every fstab line.
  grep -qx "UUID=$(blkid -s UUID -o value "$meta") /data/beegfs/meta0 ext4 noatime,nofail 0 0" "$ROOT/etc/fstab"
  grep -qx "UUID=$(blkid -s UUID -o value "$stor") /data/beegfs/stor0 xfs noatime,nofail 0 0" "$ROOT/etc/fstab"
  grep -qx "UUID=$(blkid -s UUID -o value "$lun") /export xfs noatime,nofail 0 0" "$ROOT/etc/fstab"
  grep -qx "srv0:/export /mnt/nfs nfs vers=3,proto=tcp,rsize=1048576,wsize=1048576,_netdev,nofail 0 0" "$ROOT/etc/fstab"
  [ -s "$ROOT/etc/apt/sources.list.d/beegfs.list" ] && [ -s "$ROOT/etc/apt/keyrings/beegfs.asc" ]
  [ -s "$ROOT/etc/exports.d/pfslab.exports" ] && [ -s "$ROOT/etc/nfs.conf.d/90-pfslab.conf" ]
  [ -s "$ROOT/etc/systemd/system/beegfs-meta@meta0.service.d/90-pfslab-numa.conf" ]
  [ "$(wc -l <"$SHIM_STATE/mounts")" -eq 4 ]
  # The client's health passes with its nofail line.
  role "$NFS" nfs health client
  assert_success
  # An admin's line added while the lab ran stays.
  echo "//nas/share /nas cifs credentials=/root/.nas,nofail 0 0" >>"$ROOT/etc/fstab"
  lab_down
  assert_success
  assert_line "host-forget: unmounted /data/beegfs/meta0 (the lab's fstab line)"
  assert_line "host-forget: removed the lab's 4 line(s) from /etc/fstab"
  assert_line "host-forget: removed /etc/apt/sources.list.d/beegfs.list"
  assert_line "host-forget: removed /etc/apt/keyrings/beegfs.asc"
  assert_line "host-forget: wiped the signatures the lab wrote on $lun"
  assert_equal "$(tail -n 1 "$ROOT/etc/fstab")" "//nas/share /nas cifs credentials=/root/.nas,nofail 0 0"
  sed -i '$d' "$ROOT/etc/fstab"
  assert_left_as_found
  # A second lab-down finds nothing left to do and changes nothing.
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$HOME" PFSLAB_MOUNTS="$SHIM_STATE/mounts" PFSLAB_SYSROOT="$ROOT" \
    bash "$KIT/scripts/host-forget" lab-t "pfslab-inner lab=lab-t" /mnt/nfs /opt/pfslab
  assert_success
  assert_left_as_found
}

@test "lab-down stops the md array BeeGFS made over two loop devices and clears their superblocks; its mdadm.conf line goes, the host's stay" {
  command -v mdadm >/dev/null || skip "mdadm is not installed here, so no md array can be made"
  [[ -e /proc/mdstat ]] || skip "this kernel has no md driver (/proc/mdstat is missing), so no md array can be made"
  new_loop && m0=$DEV
  new_loop && m1=$DEV
  new_loop && stor=$DEV
  new_loop && lun=$DEV
  configs "[\"$m0\", \"$m1\"]" "[\"$stor\"]" "$lun"
  mkdir -p "$ROOT/dev/md"
  MDS+=(/dev/md/pfs_meta0)
  ln -s /dev/md/pfs_meta0 "$ROOT/dev/md/pfs_meta0"
  BEFORE=$(listing)
  FSTAB_SUM=$(sha256sum <"$ROOT/etc/fstab")
  MDADM_SUM=$(sha256sum <"$ROOT/etc/mdadm/mdadm.conf")
  lab_up
  grep -q "^ARRAY /dev/md/pfs_meta0 " "$ROOT/etc/mdadm/mdadm.conf"
  lab_down
  assert_success
  assert_line "host-forget: stopped md array /dev/md/pfs_meta0"
  [ ! -e /dev/md/pfs_meta0 ]
  assert_left_as_found
}
