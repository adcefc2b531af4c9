#!/usr/bin/env bats
# shellcheck disable=SC2016
# Which node gets which of the cluster's files (pfslab registry cluster-files, the
# families' roles[].cluster_files): the table by role, the local lab's copy
# (scripts/local/cluster-files, pfslab/transport/local_node.py) between per-node directories (modes kept, the
# bootstrap node untouched) and the remote labs' copy over scp -3 for a BeeGFS lab.

load helpers

setup() {
  sandbox
  # The bootstrap node's files, as the Ceph and BeeGFS roles make them.
  SRC=$BATS_TEST_TMPDIR/nodes/mon0/cluster
  mkdir -p "$SRC"
  chmod 700 "$SRC"
  local f
  for f in ceph.mon.keyring ceph.client.admin.keyring ceph.client.bootstrap-osd.keyring \
    ceph.client.bootstrap-mgr.keyring ceph.client.pfslab.keyring; do
    printf '[x]\n\tkey = %s==\n' "$f" >"$SRC/$f"
    chmod 600 "$SRC/$f"
  done
  echo "[global]" >"$SRC/ceph.conf" && chmod 644 "$SRC/ceph.conf"
  echo monmap >"$SRC/monmap" && chmod 644 "$SRC/monmap"
}

files_for() { run "$KIT/.venv/bin/pfslab" registry cluster-files "$@"; }

@test "the table: mon and admin keys on monitors, a bootstrap key per daemon kind, the client's own key on clients" {
  files_for ceph-mon ceph-mgr ceph-mds
  assert_output "ceph.client.admin.keyring
ceph.client.bootstrap-mgr.keyring
ceph.conf
ceph.mon.keyring
monmap"
  files_for ceph-osd
  assert_output "ceph.client.bootstrap-osd.keyring
ceph.conf"
  files_for ceph-mgr
  assert_output "ceph.client.bootstrap-mgr.keyring
ceph.conf"
  files_for ceph-client
  assert_output "ceph.client.pfslab.keyring
ceph.conf"
  for r in beegfs-mgmt beegfs-meta beegfs-storage beegfs-client beegfs-mon; do
    files_for "$r"
    assert_output beegfs.auth
  done
  for r in slurm-controller slurm-node; do
    files_for "$r"
    assert_output munge.key
  done
  files_for nfs-client gpfs-nsd
  assert_output ""
}

# scripts/local/cluster-files SOURCE CONFIG for a node with these roles.
local_copy() {
  local name=$1 cfg
  shift
  cfg=$BATS_TEST_TMPDIR/$name.json
  jq -n --arg n "$name" --arg c "$BATS_TEST_TMPDIR/nodes/$name/cluster" --arg r "$*" \
    '{node: {name: $n, roles: ($r | split(" "))}, paths: {cluster: $c}}' >"$cfg"
  run /usr/bin/env -i PATH="$SAFE" "$KIT/scripts/local/cluster-files" "$SRC" "$cfg"
}

# Node $1's directory holds the bootstrap node's file $2, byte for byte.
got_source_file() { cmp "$SRC/$2" "$BATS_TEST_TMPDIR/nodes/$1/cluster/$2"; }

# remote_copy LAB FILE NODES PHASES: remote_copy_cluster LAB (scripts/lib/remote.sh) on
# an AWS lab whose inventory has these nodes and phases (jq expressions), ssh and scp
# shimmed, the bootstrap node listing FILE as its cluster files. Sets O (the ssh options).
remote_copy() {
  local lab=$1 file=$2 nodes=$3 phases=$4 build=$BATS_TEST_TMPDIR/build
  mkdir -p "$build/$lab/ssh"
  : >"$build/$lab/ssh/id_ed25519"
  jq -n --arg lab "$lab" "{lab: \$lab, target: \"aws\", ssh: {user: \"root\"}, cluster_path: \"/etc/pfslab/cluster\",
    nodes: $nodes, phases: $phases}" >"$build/$lab/inventory.json"
  shim ssh "[[ \${!#} == *\"ls -A\"* ]] && echo $file; exit 0"
  shim scp
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$build" bash -c \
    'source "$1/scripts/lib/common.sh" && source "$1/scripts/lib/remote.sh" && remote_copy_cluster "$2"' _ "$KIT" "$lab"
  assert_success
  O="-F $build/$lab/ssh/config"
}

# The scp -3 lines that copy FILE from node FROM to each NODE, in order: scp_lines FROM FILE NODE...
scp_lines() {
  local from=$1 file=$2 node
  shift 2
  for node in "$@"; do echo "scp -3 -q -p $O $from:/etc/pfslab/cluster/$file $node:/etc/pfslab/cluster/"; done
}

@test "local lab: each node's directory gets only its roles' files, modes kept, directory 700" {
  local_copy cli0 ceph-client
  assert_success
  dst=$BATS_TEST_TMPDIR/nodes/cli0/cluster
  run stat -c '%a %n' "$dst" "$dst"/*
  assert_output "700 $dst
600 $dst/ceph.client.pfslab.keyring
644 $dst/ceph.conf"
  local_copy osd0 ceph-osd
  assert_success
  run ls "$BATS_TEST_TMPDIR/nodes/osd0/cluster"
  assert_output "ceph.client.bootstrap-osd.keyring
ceph.conf"
  # The bootstrap node's own directory is the source: nothing changes there.
  before=$(ls -l --time-style=+%s.%N "$SRC")
  local_copy mon0 ceph-mon ceph-mgr ceph-mds
  assert_success
  assert_equal "$(ls -l --time-style=+%s.%N "$SRC")" "$before"
  # A file changed on the bootstrap node is copied again; an identical one is left alone.
  echo "[global] changed" >"$SRC/ceph.conf"
  local_copy cli0 ceph-client
  assert_success
  assert_equal "$(cat "$BATS_TEST_TMPDIR/nodes/cli0/cluster/ceph.conf")" "[global] changed"
}

@test "local lab: a BeeGFS secret (400) goes to every BeeGFS node, nothing of Ceph's does" {
  rm -f "$SRC"/*
  head -c 48 /dev/urandom | base64 -w 0 >"$SRC/beegfs.auth"
  chmod 400 "$SRC/beegfs.auth"
  local_copy cli0 beegfs-client
  assert_success
  run stat -c '%a %n' "$BATS_TEST_TMPDIR/nodes/cli0/cluster"/*
  assert_output "400 $BATS_TEST_TMPDIR/nodes/cli0/cluster/beegfs.auth"
  got_source_file cli0 beegfs.auth
}

@test "local lab: the first Slurm node makes the lab's munge key (400) with the bootstrap node's files; every Slurm node gets that one" {
  ln -sf "$(command -v chown)" "$SAFE/chown"
  ln -sf "$(command -v head)" "$SAFE/head"
  rm -f "$SRC"/*
  local_copy cli0 ceph-client slurm-controller slurm-node
  assert_success
  assert_output ""
  run stat -c '%a %s' "$SRC/munge.key"
  assert_output "400 1024"
  if id munge >/dev/null 2>&1; then assert_equal "$(stat -c %U "$SRC/munge.key")" munge; fi
  got_source_file cli0 munge.key
  sum=$(sha256sum <"$SRC/munge.key")
  local_copy cli1 slurm-node
  assert_success
  got_source_file cli1 munge.key
  assert_equal "$(sha256sum <"$SRC/munge.key")" "$sum"
  # A node without a Slurm role neither makes nor gets it.
  rm -f "$SRC/munge.key"
  local_copy osd0 ceph-osd
  assert_success
  [[ ! -e $SRC/munge.key && ! -e $BATS_TEST_TMPDIR/nodes/osd0/cluster/munge.key ]]
}

@test "remote lab (BeeGFS): every BeeGFS node gets the secret by scp -3, no file goes elsewhere" {
  remote_copy aws-beegfs beegfs.auth '[
      {name: "mgmt0", group: "mgmt", roles: ["beegfs-mgmt", "beegfs-meta"], address: "10.21.0.10", ssh_address: "198.51.100.10"},
      {name: "ss0", group: "ss", roles: ["beegfs-storage"], address: "10.21.0.11", ssh_address: "198.51.100.11"},
      {name: "cli0", group: "cli", roles: ["beegfs-client"], address: "10.21.0.12", ssh_address: "198.51.100.12"}]' \
    '[[{node: "mgmt0", role: "beegfs-mgmt"}], [{node: "mgmt0", role: "beegfs-meta"}, {node: "ss0", role: "beegfs-storage"}], [], [], [{node: "cli0", role: "beegfs-client"}]]'
  run calls scp
  assert_output "$(scp_lines mgmt0 beegfs.auth ss0 cli0)"
}

@test "remote lab with Slurm: the bootstrap node makes the munge key, only the Slurm nodes get it" {
  remote_copy aws-nfs munge.key '[
      {name: "srv0", group: "srv", roles: ["nfs-server"], address: "10.21.0.10", ssh_address: "198.51.100.10"},
      {name: "cli0", group: "cli", roles: ["nfs-client", "slurm-controller", "slurm-node"], address: "10.21.0.11", ssh_address: "198.51.100.11"},
      {name: "cli1", group: "cli", roles: ["nfs-client", "slurm-node"], address: "10.21.0.12", ssh_address: "198.51.100.12"}]' \
    '[[{node: "srv0", role: "nfs-server"}], [{node: "cli0", role: "nfs-client"}, {node: "cli1", role: "nfs-client"}], [], [], [{node: "cli0", role: "slurm-controller"}]]'
  run calls ssh
  assert_line --index 0 --partial "srv0 bash -c 'set -e; source /opt/pfslab/scripts/lib/common.sh; source /opt/pfslab/scripts/lib/cluster-files.sh; mkdir -p /etc/pfslab/cluster; chmod 700 /etc/pfslab/cluster; umask 077; munge_key_make /etc/pfslab/cluster/munge.key'"
  run calls scp
  assert_output "$(scp_lines srv0 munge.key cli0 cli1)"
}
