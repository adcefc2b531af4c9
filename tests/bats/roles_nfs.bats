#!/usr/bin/env bats
# shellcheck disable=SC2016
# The NFS role against command shims (seed 001, NSS7.3-HA: 8 LUNs of linear 8+2 RAID 6
# with 128 KiB chunks, XFS, an HA pair, clients over IPoIB), plus the XFS geometry the
# role asks for checked with the real mkfs.xfs on a sparse file.
#
# Not run for real: this machine's kernel has no nfsd and no NFS client (neither is in
# /proc/filesystems and there are no modules to load), so a throwaway export and mount
# between network namespaces cannot work here.

load helpers

setup() {
  sandbox
  common_shims
  shim pvcreate
  shim vgcreate
  shim lvcreate 'mkdir -p "$PFSLAB_SYSROOT/dev/${!#}" && : >"$PFSLAB_SYSROOT/dev/${!#}/export"'
  shim exportfs 'if [[ $1 == -s ]]; then echo "/export  10.10.0.0/16(sync,wdelay,hide,no_subtree_check,sec=sys,rw,secure,no_root_squash,no_all_squash)"; fi'
  shim ip 'if [[ $2 == addr && $3 == show ]]; then cat "$SHIM_STATE/ip" 2>/dev/null; fi; if [[ $2 == add ]]; then echo "4: ib0    inet $3 scope global ib0" >>"$SHIM_STATE/ip"; fi; exit 0'
  mkdir -p "$ROOT/dev/mapper"
  for i in 0 1 2 3 4 5 6 7; do : >"$ROOT/dev/mapper/lun$i"; done
}

@test "active server: 8 LUNs striped on a stripe boundary, XFS su=128k sw=8, 256 nfsd threads, exported to the client nodes only" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  role "$cfg" nfs configure server
  assert_success
  luns="/dev/mapper/lun0 /dev/mapper/lun1 /dev/mapper/lun2 /dev/mapper/lun3 /dev/mapper/lun4 /dev/mapper/lun5 /dev/mapper/lun6 /dev/mapper/lun7"
  run calls
  assert_line --index 0 "pvcreate -y --dataalignment 1024k $luns"
  assert_line --index 1 "vgcreate pfsnfs $luns"
  # lun_layout striped (nss73-ha's kit's choice): one stripe per LUN, one LUN's full RAID stripe each.
  assert_line --index 2 "lvcreate -y -n export -i 8 -I 1024k -l 100%FREE pfsnfs"
  assert_line "mkfs.xfs -d su=128k,sw=8 /dev/pfsnfs/export"
  assert_line "mount /export"
  grep -qx "UUID=uuid_dev_pfsnfs_export /export xfs noatime,nofail 0 0" "$ROOT/etc/fstab"
  assert_equal "$(tail -n 1 "$ROOT/etc/exports.d/pfslab.exports")" "/export 10.10.0.20(rw,sync,no_root_squash,no_subtree_check) 10.10.0.21(rw,sync,no_root_squash,no_subtree_check)"
  assert_equal "$(tail -n 2 "$ROOT/etc/nfs.conf.d/90-pfslab.conf")" "[nfsd]
threads=256"
  # Again: nothing is created twice.
  : >"$SHIM_LOG"
  role "$cfg" nfs configure server
  assert_success
  run calls
  refute_line --partial pvcreate
  refute_line --partial mkfs.xfs
}

@test "lun_layout concatenated (the registry's default, for a config without it) joins the LUNs linearly; a bad one is refused" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  [ "$(jq -r '.settings.nfs.properties.lun_layout.default' "$KIT/families/nfs/family.json")" = concatenated ]
  jq 'del(.filesystem.nfs.lun_layout)' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  role "$cfg" nfs configure server
  assert_success
  assert_equal "$(calls lvcreate)" "lvcreate -y -n export -l 100%FREE pfsnfs"
  jq '.filesystem.nfs.lun_layout = "raid0"' "$cfg" >"$cfg.bad"
  rm -rf "$ROOT/dev/pfsnfs"
  : >"$SHIM_LOG"
  role "$cfg.bad" nfs configure server
  assert_failure 2
  assert_output --partial "error: filesystem.nfs.lun_layout 'raid0' is not one of concatenated, striped"
  [ -z "$(calls lvcreate)" ]
}

@test "export_clients, when the lab gives it, replaces the list of client nodes" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  jq '.filesystem.nfs.export_clients = "10.10.0.0/16 10.11.0.5"' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  role "$cfg" nfs configure server
  assert_success
  assert_equal "$(tail -n 1 "$ROOT/etc/exports.d/pfslab.exports")" "/export 10.10.0.0/16(rw,sync,no_root_squash,no_subtree_check) 10.11.0.5(rw,sync,no_root_squash,no_subtree_check)"
}

@test "active server start: nfs-server, exportfs, and the floating address on ib0" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  role "$cfg" nfs up server
  assert_success
  run calls
  assert_line "systemctl enable --now nfs-server.service"
  assert_line "exportfs -ra"
  assert_line "ip addr add 10.10.0.100/16 dev ib0"
  : >"$SHIM_LOG"
  role "$cfg" nfs start server
  run calls
  refute_line --partial "ip addr add"
  refute_line --partial "enable --now"
}

@test "standby server: never touches the shared LUNs, stays stopped, checks the active one" {
  cfg=$(node_config nfs.json srv1 srv 1 10.10.0.2 nfs-server)
  shim rpcinfo 'exit 0'
  role "$cfg" nfs up server
  assert_success
  run calls
  refute_line --partial pvcreate
  refute_line --partial mkfs
  refute_line --partial "enable --now"
  refute_line --partial "ip addr add"
  [ -s "$ROOT/etc/exports.d/pfslab.exports" ]
  role "$cfg" nfs health server
  assert_success
  assert_output "nfs-server@srv1: standby; srv0 serves at 10.10.0.100"
  assert_equal "$(calls rpcinfo)" "rpcinfo -t 10.10.0.100 nfs 3"
  shim rpcinfo 'exit 1'
  role "$cfg" nfs health server
  assert_failure 1
  assert_output "nfs-server@srv1: standby; the active server srv0 does not answer at 10.10.0.100"
}

@test "server health checks the XFS stripe geometry, the LUNs' layout and the nfsd threads against the lab" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  shim lvs 'cat "$SHIM_STATE/lvs"'
  echo "  striped    8" >"$SHIM_STATE/lvs"
  mkdir -p "$ROOT/proc/fs/nfsd"
  echo 256 >"$ROOT/proc/fs/nfsd/threads"
  echo "nfs-server.service" >"$SHIM_STATE/active"
  echo "/export xfs /dev/mapper/pfsnfs-export" >"$SHIM_STATE/mounts"
  echo "4: ib0    inet 10.10.0.100/16 scope global ib0" >"$SHIM_STATE/ip"
  shim xfs_info 'printf "%s\n" "meta-data=/dev/mapper/pfsnfs-export isize=512    agcount=32, agsize=1 blks" \
    "data     =                       bsize=4096   blocks=1, imaxpct=5" \
    "         =                       sunit=32     swidth=256 blks"'
  role "$cfg" nfs health server
  assert_success
  assert_output "nfs-server@srv0: exporting /export (XFS su=128k sw=8, 8 LUNs striped, 256 nfsd threads) at 10.10.0.100/16"
  assert_equal "$(calls lvs)" "lvs --noheadings -o segtype,stripes pfsnfs/export"
  echo "  linear    1" >"$SHIM_STATE/lvs"
  role "$cfg" nfs health server
  assert_failure 1
  assert_output "nfs-server@srv0: the volume pfsnfs/export is linear 1 (segment type, stripes); lun_layout striped needs striped 8"
  echo "  striped    8" >"$SHIM_STATE/lvs"
  echo 8 >"$ROOT/proc/fs/nfsd/threads"
  role "$cfg" nfs health server
  assert_failure 1
  assert_output "nfs-server@srv0: nfsd runs 8 threads; the lab's server_threads is 256"
  shim xfs_info 'printf "%s\n" "data     =                       bsize=4096   blocks=1, imaxpct=5" \
    "         =                       sunit=0      swidth=0 blks"'
  role "$cfg" nfs health server
  assert_failure 1
  assert_output "nfs-server@srv0: XFS at /export has sunit=0 swidth=0 blocks; the lab's RAID needs 32 and 256"
}

@test "the mkfs.xfs options the role emits give su=128k sw=8 with the real mkfs.xfs" {
  command -v mkfs.xfs >/dev/null && command -v xfs_db >/dev/null || skip "xfsprogs is not installed"
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  role "$cfg" nfs configure server
  assert_success
  read -r -a argv <<<"$(calls mkfs.xfs)"
  img=$BATS_TEST_TMPDIR/lun.img
  truncate -s 1G "$img"
  # The role's exact arguments, with the sparse file in place of the volume.
  mkfs.xfs -q "${argv[@]:1:${#argv[@]}-2}" "$img"
  run xfs_db -r -c 'sb 0' -c 'p blocksize unit width' "$img"
  assert_output "blocksize = 4096
unit = 32
width = 256"
}

@test "client: the lab's mount options (default NFSv3 over TCP, 1 MiB rsize/wsize) to the floating address" {
  cfg=$(node_config nfs.json cli0 cli 0 10.10.1.1 nfs-client)
  role "$cfg" nfs up client
  assert_success
  assert_equal "$(calls mount)" "mount -t nfs -o vers=3,proto=tcp,rsize=1048576,wsize=1048576 10.10.0.100:/export /mnt/nfs"
  grep -qx "10.10.0.100:/export /mnt/nfs nfs vers=3,proto=tcp,rsize=1048576,wsize=1048576,_netdev,nofail 0 0" "$ROOT/etc/fstab"
  role "$cfg" nfs health client
  assert_success
  : >"$SHIM_LOG"
  role "$cfg" nfs start client
  [ -z "$(calls mount)" ]
  jq '.filesystem.nfs.mount_options = "vers=4.2,nconnect=8"' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  : >"$SHIM_STATE/mounts"
  role "$cfg" nfs start client
  assert_equal "$(calls mount)" "mount -t nfs -o vers=4.2,nconnect=8 10.10.0.100:/export /mnt/nfs"
}

@test "client health fails when the mount is missing or from elsewhere" {
  cfg=$(node_config nfs.json cli0 cli 0 10.10.1.1 nfs-client)
  role "$cfg" nfs health client
  assert_failure 1
  assert_output "nfs-client@cli0: /mnt/nfs is not 10.10.0.100:/export over NFS (not mounted)"
  echo "/mnt/nfs nfs otherhost:/export" >"$SHIM_STATE/mounts"
  role "$cfg" nfs health client
  assert_failure 1
  assert_output "nfs-client@cli0: /mnt/nfs is not 10.10.0.100:/export over NFS (nfs otherhost:/export)"
}

@test "wrong LUN count, missing LUN, HA without address, bad component: one line, exit 2" {
  cfg=$(node_config nfs.json srv0 srv 0 10.10.0.1 nfs-server)
  jq '.filesystem.nfs.luns = 6' "$cfg" >"$cfg.6"
  role "$cfg.6" nfs configure server
  assert_failure 2
  assert_output "[nfs:server@srv0] error: filesystem.nfs: luns is 6 but devices lists 8"
  rm "$ROOT/dev/mapper/lun5"
  role "$cfg" nfs configure server
  assert_failure 2
  assert_output "[nfs:server@srv0] error: nfs server: LUN /dev/mapper/lun5 does not exist"
  jq 'del(.filesystem.nfs.ha.floating_ip)' "$cfg" >"$cfg.noip"
  role "$cfg.noip" nfs start server
  assert_failure 2
  assert_output "[nfs:server@srv0] error: filesystem.nfs.ha_pair is true but ha.floating_ip is not set (clients need one address)"
  role "$cfg" nfs start gateway
  assert_failure 2
  assert_output "[nfs:gateway@srv0] error: component 'gateway' is not one of server, client, cluster (usage: nfs ACTION COMPONENT)"
  [ -z "$(calls pvcreate)" ]
}
