#!/usr/bin/env bats
# shellcheck disable=SC2016
# The cross-node bring-up of a cloud lab (scripts/remote-up, scripts/lib/remote.sh)
# against ssh and scp shims: the exact commands, in order, from the inventory alone.

load helpers

setup() {
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  LAB=$BUILD/aws-cephfs
  mkdir -p "$LAB/ssh"
  : >"$LAB/ssh/id_ed25519"
  jq -n '{lab: "aws-cephfs", target: "aws", ssh: {user: "root"}, cluster_path: "/etc/pfslab/cluster",
    nodes: [
      {name: "mon0", group: "mon", roles: ["ceph-mon", "ceph-mgr"], address: "10.21.0.10", ssh_address: "198.51.100.10"},
      {name: "osd0", group: "osd", roles: ["ceph-osd"], address: "10.21.0.11", ssh_address: "198.51.100.11"},
      {name: "cli0", group: "cli", roles: ["ceph-client"], address: "10.21.0.12", ssh_address: "198.51.100.12"}],
    phases: [[{node: "mon0", role: "ceph-mon"}], [{node: "mon0", role: "ceph-mgr"}], [{node: "osd0", role: "ceph-osd"}], [], [{node: "cli0", role: "ceph-client"}]]}' \
    >"$LAB/inventory.json"
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *"ls -A"*) [[ $* == *root@198.51.100.10* ]] && printf "%s\n" ceph.client.admin.keyring ceph.client.bootstrap-mgr.keyring \
    ceph.client.bootstrap-osd.keyring ceph.client.pfslab.keyring ceph.conf ceph.mon.keyring monmap ;;
esac'
  shim scp
  O="-o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$LAB/ssh/known_hosts -o ConnectTimeout=15 -i $LAB/ssh/id_ed25519"
}

remote_up() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/remote-up" "$@"
}

@test "remote-up: wait for every first boot, copy the cluster files, start phase by phase, preflight" {
  remote_up aws-cephfs
  assert_success
  assert_line "preflight: every check passed on lab aws-cephfs"
  r="PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles"
  # The commands up to preflight, in order (preflight's own ssh calls follow).
  run bash -c "sed -n '1,14p' '$SHIM_LOG'"
  assert_output "ssh -n $O root@198.51.100.10 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O root@198.51.100.10 cloud-init status
ssh -n $O root@198.51.100.11 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O root@198.51.100.11 cloud-init status
ssh -n $O root@198.51.100.12 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O root@198.51.100.12 cloud-init status
ssh -n $O root@198.51.100.10 ls -A '/etc/pfslab/cluster' 2>/dev/null
ssh -n $O root@198.51.100.11 mkdir -p '/etc/pfslab/cluster' && chmod 700 '/etc/pfslab/cluster'
scp -3 -q -p $O root@198.51.100.10:/etc/pfslab/cluster/ceph.client.bootstrap-osd.keyring root@198.51.100.10:/etc/pfslab/cluster/ceph.conf root@198.51.100.11:/etc/pfslab/cluster/
ssh -n $O root@198.51.100.12 mkdir -p '/etc/pfslab/cluster' && chmod 700 '/etc/pfslab/cluster'
scp -3 -q -p $O root@198.51.100.10:/etc/pfslab/cluster/ceph.client.pfslab.keyring root@198.51.100.10:/etc/pfslab/cluster/ceph.conf root@198.51.100.12:/etc/pfslab/cluster/
ssh -n $O root@198.51.100.10 $r/ceph up mon
ssh -n $O root@198.51.100.10 $r/ceph up mgr
ssh -n $O root@198.51.100.11 $r/ceph up osd"
  assert_equal "$(sed -n '15p' "$SHIM_LOG")" "ssh -n $O root@198.51.100.12 $r/ceph up client"
  # preflight reaches nodes by lab address through the lab's ssh config.
  assert_equal "$(sed -n '16p' "$SHIM_LOG")" "ssh -F $LAB/ssh/config -n -o BatchMode=yes -o ConnectTimeout=15 10.21.0.10 $r/common health fabric"
}

@test "remote-up: the lab's ssh config maps lab addresses to SSH addresses, user, key, known_hosts" {
  remote_up aws-cephfs
  assert_success
  run cat "$LAB/ssh/config"
  assert_line "Host 10.21.0.11"
  assert_line "  HostName 198.51.100.11"
  assert_line "  User root"
  assert_line "  IdentityFile $LAB/ssh/id_ed25519"
  assert_line "  UserKnownHostsFile $LAB/ssh/known_hosts"
  assert_equal "$(stat -c %a "$LAB/ssh/config")" 600
}

@test "remote-up: a failed first boot names the node and shows its cloud-init output" {
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") [[ $* == *198.51.100.11* ]] && { echo "status: error"; exit 1; }; echo "status: done" ;;
  tail*) echo "beegfs: /dev/disk/pfslab/data3 does not exist" ;;
esac'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] osd0: beegfs: /dev/disk/pfslab/data3 does not exist"
  assert_line "[remote] error: the first boot of node osd0 of lab aws-cephfs failed (status: error); see /var/log/cloud-init-output.log on it"
  [ -z "$(calls scp)" ]
}

@test "remote-up: no cluster files on the bootstrap node (NFS, GPFS): nothing is copied" {
  shim ssh '
case ${!#} in "cloud-init status") echo "status: done" ;; *"ls -A"*) exit 1 ;; esac'
  remote_up aws-cephfs
  assert_success
  assert_line "[remote] the bootstrap node mon0 has no cluster files in /etc/pfslab/cluster; nothing to distribute"
  [ -z "$(calls scp)" ]
}

@test "remote-up: a role that fails to start stops the bring-up, naming role, node and phase" {
  shim ssh '
case ${!#} in
  "cloud-init status") echo "status: done" ;;
  *"ceph up osd") echo "osd.0: drive /dev/disk/pfslab/data0 is not a block device" >&2; exit 2 ;;
esac'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] error: ceph-osd failed to start on osd0 of lab aws-cephfs (phase 2); its output is above"
  [ -z "$(calls ssh | grep 'ceph up client')" ]
}

@test "remote-up: existing hosts run their first-boot script over ssh instead of waiting for cloud-init" {
  jq '.target = "baremetal" | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}} | .nodes |= map(del(.ssh_address))' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\necho boot %s\n' "$n" >"$LAB/boot/$n.sh"; done
  remote_up aws-cephfs
  assert_success
  [ -z "$(calls ssh | grep boot-finished)" ]
  assert_equal "$(calls ssh | grep -c 'sh -s$')" 3
  assert_equal "$(calls ssh | grep -c "^ssh $O root@10.21.0.10 sh -s$")" 1
}

@test "remote-down stops the roles in reverse phase order" {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/remote-down" aws-cephfs
  assert_success
  run calls ssh
  assert_output --regexp "ceph stop client.*
.*ceph stop osd.*
.*ceph stop mgr.*
.*ceph stop mon$"
}

@test "remote-up without an inventory: one line" {
  remote_up nope
  assert_failure 2
  assert_output "[remote] error: lab nope has no inventory ($BUILD/nope/inventory.json); run 'make lab-up LAB=nope'"
}
