#!/usr/bin/env bats
# shellcheck disable=SC2016
# The Ceph role against shims of ceph, ceph-authtool, monmaptool and the daemons: the
# exact commands of configure/start for mon, osd, mds and client, and ceph.conf as the
# node config renders it. (The role also runs for real in the local lab: `make lab-up`.)

load helpers

setup() {
  sandbox
  common_shims
  shim ceph '
while (($#)); do [[ $1 == -o ]] && echo "[key]" >"$2"; args+=("$1"); shift; done
case " ${args[*]} " in
  *" osd new "*) cat >"$SHIM_STATE/osd-new.stdin" ;;
  *" fs ls "*) [[ -e $SHIM_STATE/fs ]] && echo "[{\"name\": \"cephfs\"}]" || echo "[]" ;;
  *" fs new "*) : >"$SHIM_STATE/fs" ;;
  *" mds stat "*) echo "cephfs:1 {0=mon0=up:active} 1 up:standby" ;;
  *" quorum_status "*) echo "{\"quorum_names\": [\"mon0\"]}" ;;
esac'
  shim ceph-authtool '
[[ " $* " == *" --print-key "* ]] && echo AQBtestkey==
[[ $1 == --create-keyring ]] && echo "[keyring]" >"$2"; exit 0'
  shim monmaptool 'echo monmap >"${!#}"'
  shim ceph-mon
  shim ceph-mgr
  shim ceph-osd
  shim ceph-mds
  shim ceph-fuse
}

paths() {
  N=$BATS_TEST_TMPDIR/node/$1
  CLUSTER=$N/../cluster
  CONF=$CLUSTER/ceph.conf
  ADMIN=$CLUSTER/ceph.client.admin.keyring
  CLI="ceph -c $CONF -k $ADMIN -n client.admin --connect-timeout 15"
}

# A keyring the bootstrap node's cluster files would have brought to this node.
given_keyring() { mkdir -p "$CLUSTER" && echo "[given]" >"$CLUSTER/$1"; }

@test "configure mon on the first monitor: ceph.conf from the node config, keys, monmap, mkfs" {
  cfg=$(node_config ceph.json mon0 mon 0 10.99.0.10 ceph-mon ceph-mgr ceph-mds)
  paths mon0
  role "$cfg" ceph configure mon
  assert_success
  assert_equal "$(cat "$CONF")" "# Written by pfslab from labs/cephtest.yaml; do not edit by hand.
[global]
fsid = 8ccd7d9d-3f28-5b8b-bead-549ebec5ae11
mon_initial_members = mon0
mon_host = [v2:10.99.0.10:3300,v1:10.99.0.10:6789]
public_network = 10.99.0.0/24
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
osd_pool_default_size = 2
osd_pool_default_min_size = 1
osd_crush_chooseleaf_type = 0
osd_heartbeat_grace = 60
[mon]
[mgr]
[osd]
bluestore_cache_size = 128M
[mds]
[client]
client_oc_size = 100M
keyring = $CLUSTER/ceph.\$name.keyring"
  run calls
  assert_line --index 0 "ceph-authtool --create-keyring $CLUSTER/ceph.mon.keyring.new --gen-key -n mon. --cap mon allow *"
  assert_line --index 1 "ceph-authtool --create-keyring $ADMIN --gen-key -n client.admin --cap mon allow * --cap osd allow * --cap mds allow * --cap mgr allow *"
  assert_line --index 2 "ceph-authtool --create-keyring $CLUSTER/ceph.client.bootstrap-osd.keyring --gen-key -n client.bootstrap-osd --cap mon allow profile bootstrap-osd"
  assert_line --index 3 "ceph-authtool --create-keyring $CLUSTER/ceph.client.bootstrap-mgr.keyring --gen-key -n client.bootstrap-mgr --cap mon allow profile bootstrap-mgr"
  assert_line --index 4 "ceph-authtool --create-keyring $CLUSTER/ceph.client.pfslab.keyring --gen-key -n client.pfslab --cap mon allow r --cap mds allow rw --cap osd allow rw tag cephfs data=cephfs"
  assert_line --index 5 "ceph-authtool $CLUSTER/ceph.mon.keyring.new --import-keyring $ADMIN"
  assert_line --index 6 "ceph-authtool $CLUSTER/ceph.mon.keyring.new --import-keyring $CLUSTER/ceph.client.bootstrap-osd.keyring"
  assert_line --index 7 "ceph-authtool $CLUSTER/ceph.mon.keyring.new --import-keyring $CLUSTER/ceph.client.bootstrap-mgr.keyring"
  assert_line --index 8 "ceph-authtool $CLUSTER/ceph.mon.keyring.new --import-keyring $CLUSTER/ceph.client.pfslab.keyring"
  assert_line --index 9 "monmaptool --create --fsid 8ccd7d9d-3f28-5b8b-bead-549ebec5ae11 --addv mon0 [v2:10.99.0.10:3300,v1:10.99.0.10:6789] $CLUSTER/monmap.new"
  assert_line --index 10 "ceph-mon -c $CONF --mkfs -i mon0 --mon-data $N/state/mon/ceph-mon0 --monmap $CLUSTER/monmap --keyring $CLUSTER/ceph.mon.keyring --log-file $N/log/ceph-mon.mon0.mkfs.log"
  # Keyrings private, the public files readable, everything else private (umask 077).
  run stat -c '%a %n' "$CLUSTER"/* "$CLUSTER" "$N/state" "$N/log"
  assert_output "600 $CLUSTER/ceph.client.admin.keyring
600 $CLUSTER/ceph.client.bootstrap-mgr.keyring
600 $CLUSTER/ceph.client.bootstrap-osd.keyring
600 $CLUSTER/ceph.client.pfslab.keyring
644 $CLUSTER/ceph.conf
600 $CLUSTER/ceph.mon.keyring
644 $CLUSTER/monmap
700 $CLUSTER
700 $N/state
700 $N/log"
  # Idempotent: a second configure creates nothing.
  : >"$SHIM_LOG"
  role "$cfg" ceph configure mon
  assert_success
  [ -z "$(calls)" ]
}

@test "ceph.conf follows the lab: failure domain host, pool size 3, no min size" {
  cfg=$(node_config ceph.json mon0 mon 0 10.99.0.10 ceph-mon)
  jq '.filesystem.ceph.failure_domain = "host" | .filesystem.ceph.pool_size = 3 | del(.filesystem.ceph.pool_min_size)' "$cfg" >"$cfg.h"
  paths mon0
  role "$cfg.h" ceph configure mon
  assert_success
  grep -qx "osd_crush_chooseleaf_type = 1" "$CONF"
  grep -qx "osd_pool_default_size = 3" "$CONF"
  run grep -c "min_size" "$CONF"
  assert_output 0
  jq '.filesystem.ceph.failure_domain = "row"' "$cfg" >"$cfg.bad"
  rm -f "$CONF"
  role "$cfg.bad" ceph configure mon
  assert_failure 2
  assert_output "[ceph:mon@mon0] error: filesystem.ceph.failure_domain: 'row' is not one of osd, host, rack"
}

@test "start mon: ceph-mon with per-node paths and the node's address, then waits for quorum" {
  cfg=$(node_config ceph.json mon0 mon 0 10.99.0.10 ceph-mon)
  paths mon0
  role "$cfg" ceph configure mon
  : >"$SHIM_LOG"
  role "$cfg" ceph start mon
  assert_success
  run calls
  assert_line --index 0 "ceph-mon -c $CONF -i mon0 --pid-file $N/run/ceph-mon.mon0.pid --admin-socket $N/run/ceph-mon.mon0.asok --log-file $N/log/ceph-mon.mon0.log --run-dir $N/run --crash-dir $N/state/crash --mon-data $N/state/mon/ceph-mon0 --public-addr 10.99.0.10"
  assert_line --index 1 "$CLI quorum_status"
}

@test "configure and start osd: registration, a file-backed BlueStore of the lab's size, the daemon" {
  cfg=$(node_config ceph.json osd0 osd 0 10.99.0.11 ceph-osd)
  paths osd0
  jq --arg p "$N/state/osd/ceph-1/block" '.cluster.osd_ids = [1] | .disks = [{osd_id: 1, kind: "file", path: $p, size_bytes: 8599998464}]' "$cfg" >"$cfg.1"
  # Without its bootstrap key an OSD node cannot register: one line, nothing created.
  role "$cfg.1" ceph configure osd
  assert_failure 2
  assert_output "[ceph:osd@osd0] error: $CLUSTER/ceph.client.bootstrap-osd.keyring is missing on osd0; the bootstrap node's cluster files were not copied here (scripts/lib/cluster-files.sh says which node gets which)"
  given_keyring ceph.client.bootstrap-osd.keyring
  OSDCLI="ceph -c $CONF -k $CLUSTER/ceph.client.bootstrap-osd.keyring -n client.bootstrap-osd --connect-timeout 15"
  role "$cfg.1" ceph configure osd
  assert_success
  run calls
  assert_line --index 0 "ceph-authtool --create-keyring $N/state/osd/ceph-1/keyring --gen-key -n osd.1"
  assert_line --index 1 "ceph-authtool $N/state/osd/ceph-1/keyring -n osd.1 --print-key"
  assert_line --index 2 "$OSDCLI osd purge 1 --yes-i-really-mean-it"
  assert_line --index 3 "$OSDCLI auth del osd.1"
  [[ ${lines[4]} =~ ^"$OSDCLI osd new "[0-9a-f-]{36}" 1 -i -"$ ]]
  # The OSD's key went to the monitor on stdin, and is on no command line.
  assert_equal "$(cat "$SHIM_STATE/osd-new.stdin")" '{"cephx_secret": "AQBtestkey=="}'
  refute_output --partial AQBtestkey
  [ "$(stat -c %a "$N/state/osd/ceph-1/keyring")" = 600 ]
  [[ ${lines[5]} =~ ^"ceph-osd -c $CONF -i 1 --mkfs --osd-uuid "[0-9a-f-]{36}" --osd-data $N/state/osd/ceph-1 --keyring $N/state/osd/ceph-1/keyring --log-file $N/log/ceph-osd.1.mkfs.log --bluestore_block_create=true --bluestore_block_size=8599998464"$ ]]
  : >"$SHIM_LOG"
  role "$cfg.1" ceph start osd
  assert_success
  assert_equal "$(calls)" "ceph-osd -c $CONF -i 1 --pid-file $N/run/ceph-osd.1.pid --admin-socket $N/run/ceph-osd.1.asok --log-file $N/log/ceph-osd.1.log --run-dir $N/run --crash-dir $N/state/crash --osd-data $N/state/osd/ceph-1 --keyring $N/state/osd/ceph-1/keyring --public-addr 10.99.0.11 --cluster-addr 10.99.0.11"
}

@test "configure mds on the first MDS: its key, then the CephFS pools with the lab's PG counts" {
  cfg=$(node_config ceph.json mon0 mon 0 10.99.0.10 ceph-mon ceph-mds)
  paths mon0
  given_keyring ceph.client.admin.keyring
  role "$cfg" ceph configure mds
  assert_success
  assert_equal "$(calls)" "$CLI auth get-or-create mds.mon0 mon allow profile mds osd allow rwx mds allow -o $N/state/mds/ceph-mon0/keyring.new
$CLI fs ls -f json
$CLI osd pool create cephfs_metadata 16
$CLI osd pool create cephfs_data 32
$CLI osd pool set cephfs_metadata pg_autoscale_mode off
$CLI osd pool set cephfs_data pg_autoscale_mode off
$CLI fs new cephfs cephfs_metadata cephfs_data"
  : >"$SHIM_LOG"
  role "$cfg" ceph up mds
  assert_success
  assert_equal "$(calls)" "$CLI fs ls -f json
ceph-mds -c $CONF -i mon0 --pid-file $N/run/ceph-mds.mon0.pid --admin-socket $N/run/ceph-mds.mon0.asok --log-file $N/log/ceph-mds.mon0.log --run-dir $N/run --crash-dir $N/state/crash --mds-data $N/state/mds/ceph-mon0 --keyring $N/state/mds/ceph-mon0/keyring --public-addr 10.99.0.10"
}

@test "start client: waits for an active MDS, then ceph-fuse at the node's mount point" {
  cfg=$(node_config ceph.json cli0 cli 0 10.99.0.14 ceph-client)
  paths cli0
  given_keyring ceph.client.pfslab.keyring
  KEY=$CLUSTER/ceph.client.pfslab.keyring
  role "$cfg" ceph up client
  assert_success
  # A client node holds no admin key: it checks the MDS and mounts as client.pfslab.
  assert_equal "$(calls)" "ceph -c $CONF -k $KEY -n client.pfslab --connect-timeout 15 mds stat
ceph-fuse -c $CONF -n client.pfslab -k $KEY --pid_file $N/run/ceph-fuse.pid --admin-socket $N/run/ceph-fuse.asok --log-file $N/log/ceph-fuse.log $N/mnt"
  : >"$N/mnt/stray"
  rm -f "$SHIM_STATE/mounts"
  : >"$SHIM_STATE/mounts"
  role "$cfg" ceph start client
  assert_failure 2
  assert_output "[ceph:client@cli0] error: mount point $N/mnt is not empty; move its files away first"
}

@test "bad action or component: one line, exit 2" {
  cfg=$(node_config ceph.json mon0 mon 0 10.99.0.10 ceph-mon)
  role "$cfg" ceph configure rgw
  assert_failure 2
  assert_output "[ceph:rgw@mon0] error: component 'rgw' is not one of mon, mgr, osd, mds, client, cluster, service (usage: ceph ACTION COMPONENT)"
  role "$cfg" ceph restart mon
  assert_failure 2
  assert_output "[ceph:mon@mon0] error: action 'restart' is not one of install, configure, start, up, stop, health, essential"
  role "$cfg" ceph start cluster
  assert_failure 2
  assert_output "[ceph:cluster@mon0] error: component 'cluster' only has the action health"
}
