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
  need_loops
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
  local md
  for md in "${MDS[@]}"; do mdadm --stop "$md" >/dev/null 2>&1 || true; done
  drop_loops
}

# A 1 GiB sparse loop device (XFS with the NFS role's stripe needs its 64 MiB log); its path goes to DEV, and
# the scratch root gets a link to it, as a host's /dev has it.
host_loop() {
  new_loop 1G
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
  host_loop && meta=$DEV
  host_loop && stor=$DEV
  host_loop && lun=$DEV
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
  # The ledger holds the host's own paths, none of the kit's folders (removed whole).
  assert_equal "$(jq -r 'select(.op == "file") | .file' "$ROOT/var/lib/pfslab/host-changes" | LC_ALL=C sort | paste -sd' ')" \
    "/etc/apt/keyrings/beegfs.asc /etc/apt/sources.list.d/beegfs.list /etc/beegfs/meta0.d/beegfs-meta.conf /etc/beegfs/meta0.d/connInterfacesFile /etc/beegfs/storage0.d/beegfs-storage.conf /etc/beegfs/storage0.d/connInterfacesFile /etc/exports.d/pfslab.exports /etc/nfs.conf.d/90-pfslab.conf /etc/systemd/system/beegfs-meta@meta0.service.d/90-pfslab-numa.conf /etc/systemd/system/beegfs-storage@storage0.service.d/90-pfslab-numa.conf"
  [ -z "$(jq -r '.file // .dir // empty' "$ROOT/var/lib/pfslab/host-changes" | grep -e '^/var/lib/pfslab' -e '^/etc/pfslab')" ]
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
  host_loop && m0=$DEV
  host_loop && m1=$DEV
  host_loop && stor=$DEV
  host_loop && lun=$DEV
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

# md and LVM as host-forget sees them through mdadm, vgs, lvs and pvs: stand-ins whose
# state is files in $SHIM_STATE (this machine's kernel has neither md nor device-mapper).
# The member devices are real loop devices of the test, which no stand-in writes.
md_lvm_shims() {
  mkdir -p "$SHIM_STATE/md"
  shim mdadm '
case $1 in
  --detail) f=$SHIM_STATE/md/$(basename "${!#}"); [[ -e $f ]] || exit 1
            while read -r m; do echo "MD_DEVICE_dev_${m##*/}_DEV=$m"; done <"$f" ;;
  --stop) rm "$SHIM_STATE/md/$(basename "$2")" ;;
  --examine) grep -qx "$2" "$SHIM_STATE/superblocks" ;;
  --zero-superblock) sed -i "\|^$2\$|d" "$SHIM_STATE/superblocks" ;;
esac'
  shim vgs '[[ -e $SHIM_STATE/vg-$1 ]]'
  shim lvs 'if [[ $1 == --noheadings ]]; then cat "$SHIM_STATE/vg-${!#}"; else grep -qx "  ${1#*/}" "$SHIM_STATE/vg-${1%%/*}" 2>/dev/null; fi'
  shim pvs '
if [[ $* == *"-S vg_name="* ]]; then vg=${!#}; sed "s/^/  /" "$SHIM_STATE/pvs-${vg#vg_name=}" 2>/dev/null; exit 0; fi
grep -qx "${!#}" "$SHIM_STATE/pvlabels" || exit 5
if grep -qx "${!#}" "$SHIM_STATE/pvs-pfsnfs" 2>/dev/null; then echo "  pfsnfs"; else echo "  "; fi'
  shim lvremove 'sed -i "\|^  ${2#*/}\$|d" "$SHIM_STATE/vg-${2%%/*}"'
  shim vgremove 'rm "$SHIM_STATE/vg-$2" "$SHIM_STATE/pvs-$2"'
  shim pvremove 'sed -i "\|^$2\$|d" "$SHIM_STATE/pvlabels"'
}

ledger() { jq -cn "$@" >>"$ROOT/var/lib/pfslab/host-changes"; }

forget() {
  : >"$SHIM_LOG"
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$HOME" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" \
    PFSLAB_MOUNTS="$SHIM_STATE/mounts" PFSLAB_SYSROOT="$ROOT" \
    bash "$KIT/scripts/host-forget" lab-t "pfslab-inner lab=lab-t" /mnt/nfs /opt/pfslab
}

@test "md arrays and LVM volumes the lab made: stopped and removed before their lines go; a mounted array, a changed array or a group with another volume stays, said in one line, and a second lab-down finishes" {
  md_lvm_shims
  local m=() i
  for i in 0 1 2 3 4 5 6 7; do host_loop && m+=("$DEV"); done
  FSTAB_SUM=$(sha256sum <"$ROOT/etc/fstab")
  MDADM_SUM=$(sha256sum <"$ROOT/etc/mdadm/mdadm.conf")
  mkdir -p "$ROOT/var/lib/pfslab"
  # What lab-up did (the roles' records) and left: three arrays and a volume group.
  local fstab_meta="UUID=aaaa /data/beegfs/meta0 ext4 noatime,nofail 0 0" fstab_export="UUID=bbbb /export xfs noatime,nofail 0 0"
  echo "$fstab_meta" >>"$ROOT/etc/fstab"
  echo "$fstab_export" >>"$ROOT/etc/fstab"
  ledger --arg l "$fstab_meta" '{op: "line", file: "/etc/fstab", line: $l}'
  ledger --arg l "$fstab_export" '{op: "line", file: "/etc/fstab", line: $l}'
  for i in meta0 meta1 stor0; do
    echo "ARRAY /dev/md/pfs_$i metadata=1.2 name=pfs_$i UUID=00:$i" >>"$ROOT/etc/mdadm/mdadm.conf"
    ledger --arg l "ARRAY /dev/md/pfs_$i metadata=1.2 name=pfs_$i UUID=00:$i" '{op: "line", file: "/etc/mdadm/mdadm.conf", line: $l}'
  done
  ledger --arg a "${m[0]}" --arg b "${m[1]}" '{op: "md", dev: "/dev/md/pfs_meta0", members: [$a, $b]}'
  ledger --arg a "${m[2]}" --arg b "${m[3]}" '{op: "md", dev: "/dev/md/pfs_meta1", members: [$a, $b]}'
  ledger --arg a "${m[4]}" --arg b "${m[5]}" '{op: "md", dev: "/dev/md/pfs_stor0", members: [$a, $b]}'
  ledger --arg a "${m[6]}" --arg b "${m[7]}" '{op: "lvm", vg: "pfsnfs", lv: "export", pvs: [$a, $b]}'
  printf '%s\n' "${m[0]}" "${m[1]}" >"$SHIM_STATE/md/pfs_meta0"
  printf '%s\n' "${m[2]}" "${m[3]}" >"$SHIM_STATE/md/pfs_meta1"
  # pfs_stor0 runs on one of its members only now (the other was swapped out by hand).
  printf '%s\n' "${m[4]}" >"$SHIM_STATE/md/pfs_stor0"
  printf '%s\n' "${m[@]:0:6}" >"$SHIM_STATE/superblocks"
  # The volume group holds a volume the lab did not make.
  printf '  %s\n' export scratch >"$SHIM_STATE/vg-pfsnfs"
  printf '%s\n' "${m[6]}" "${m[7]}" | tee "$SHIM_STATE/pvs-pfsnfs" >"$SHIM_STATE/pvlabels"
  # The lab's own mount, and a mount of pfs_meta1 that is not the lab's.
  printf '%s\n' "/data/beegfs/meta0 ext4 /dev/md/pfs_meta0" "/srv/other ext4 /dev/md/pfs_meta1" >"$SHIM_STATE/mounts"
  forget
  assert_failure 2
  assert_line "host-forget: unmounted /data/beegfs/meta0 (the lab's fstab line)"
  assert_line "host-forget: stopped md array /dev/md/pfs_meta0"
  assert_line "host-forget: md array /dev/md/pfs_meta1 is mounted or held; left running, with its mdadm.conf line and superblocks"
  assert_line "host-forget: md array /dev/md/pfs_stor0 is made of ${m[4]}, not of the lab's ${m[4]} ${m[5]}; left running, with its mdadm.conf line and superblocks"
  assert_line "host-forget: volume group pfsnfs holds volumes the lab did not make (scratch); it stays"
  assert_line "host-forget: some of what lab lab-t added to this host stays (lines above); kept its ledger in /var/lib/pfslab: run lab-down again once that is freed"
  # The array is stopped before its members' superblocks are cleared; nothing else is.
  run calls mdadm
  assert_line --index 0 --regexp "^mdadm --detail --export /dev/md/pfs_stor0$"
  [ "$(calls mdadm | grep -n -- "--stop" | cut -d: -f1)" -lt "$(calls mdadm | grep -n -- "--zero-superblock ${m[0]}" | cut -d: -f1)" ]
  [ -z "$(calls mdadm | grep -e "--stop /dev/md/pfs_meta1" -e "--stop /dev/md/pfs_stor0" -e "--zero-superblock ${m[2]}" -e "--zero-superblock ${m[4]}")" ]
  [ -z "$(calls lvremove; calls vgremove; calls pvremove)" ]
  assert_equal "$(cat "$SHIM_STATE/superblocks")" "$(printf '%s\n' "${m[@]:2:4}")"
  # The lines of what was taken down go; those of what stays, and the host's, stay.
  assert_equal "$(tail -n 2 "$ROOT/etc/mdadm/mdadm.conf")" "ARRAY /dev/md/pfs_meta1 metadata=1.2 name=pfs_meta1 UUID=00:meta1
ARRAY /dev/md/pfs_stor0 metadata=1.2 name=pfs_stor0 UUID=00:stor0"
  assert_equal "$(sha256sum <"$ROOT/etc/fstab")" "$FSTAB_SUM"
  assert_equal "$(stat -c '%a %U' "$ROOT/etc/mdadm/mdadm.conf")" "640 root"
  [ -s "$ROOT/var/lib/pfslab/host-changes" ]
  # Freed by hand: the other mount gone, the array whole again, the other volume removed.
  printf '%s\n' "${m[4]}" "${m[5]}" >"$SHIM_STATE/md/pfs_stor0"
  : >"$SHIM_STATE/mounts"
  printf '  %s\n' export >"$SHIM_STATE/vg-pfsnfs"
  forget
  assert_success
  assert_line "host-forget: stopped md array /dev/md/pfs_meta1"
  assert_line "host-forget: stopped md array /dev/md/pfs_stor0"
  assert_line "host-forget: removed LVM volume pfsnfs/export and its volume group"
  run calls
  assert_line "lvremove -y pfsnfs/export"
  assert_line "vgremove -y pfsnfs"
  assert_line "pvremove -y ${m[6]}"
  assert_line "pvremove -y ${m[7]}"
  [ ! -s "$SHIM_STATE/superblocks" ] && [ ! -s "$SHIM_STATE/pvlabels" ]
  assert_equal "$(sha256sum <"$ROOT/etc/mdadm/mdadm.conf")" "$MDADM_SUM"
  assert_equal "$(sha256sum <"$ROOT/etc/fstab")" "$FSTAB_SUM"
  [ ! -e "$ROOT/var/lib/pfslab" ]
}
