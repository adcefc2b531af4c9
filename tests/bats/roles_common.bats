#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2034  # shim bodies expand when run; ROLE_ENV is read by role()
# The common role: the seed's OS tuning (seed 002, 4) written under a scratch root on the
# nodes the lab tunes (its metadata and storage servers, as the lab plan decides), and
# the fabric preflight (no silent TCP fallback) against shims of ibv_devinfo, ucx_info,
# fi_info and ip plus a fake /sys.

load helpers

setup() {
  sandbox
  mkdir -p "$ROOT/sys/kernel/mm/transparent_hugepage"
  echo "[always] madvise never" >"$ROOT/sys/kernel/mm/transparent_hugepage/enabled"
  shim ip 'cat "$SHIM_STATE/ip" 2>/dev/null; exit 0'
}

seed_sysctls() {
  mkdir -p "$ROOT/proc/sys/vm" "$ROOT/proc/sys/kernel"
  echo 5 >"$ROOT/proc/sys/vm/dirty_background_ratio"
  echo 20 >"$ROOT/proc/sys/vm/dirty_ratio"
  echo 262144 >"$ROOT/proc/sys/vm/min_free_kbytes"
  echo 50 >"$ROOT/proc/sys/vm/vfs_cache_pressure"
  echo 2 >"$ROOT/proc/sys/vm/zone_reclaim_mode"
  echo 0 >"$ROOT/proc/sys/kernel/numa_balancing"
}

@test "configure tuning writes the seed's sysctls, NUMA balancing off and THP never for boot" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" common configure tuning
  assert_success
  assert_equal "$(cat "$ROOT/etc/sysctl.d/90-pfslab.conf")" "# Written by pfslab from labs/beegfs-small.yaml (os_tuning); do not edit by hand.
vm.dirty_background_ratio = 5
vm.dirty_ratio = 20
vm.min_free_kbytes = 262144
vm.vfs_cache_pressure = 50
vm.zone_reclaim_mode = 2
kernel.numa_balancing = 0"
  assert_equal "$(tail -n 1 "$ROOT/etc/tmpfiles.d/90-pfslab-thp.conf")" "w /sys/kernel/mm/transparent_hugepage/enabled - - - - never"
  [ -z "$(calls)" ]
  role "$cfg" common configure tuning
  assert_output "[common:tuning@mds0] tuning files already match the lab file; nothing to do"
}

@test "start tuning loads the file with sysctl -p and turns THP off now" {
  shim sysctl
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" common up tuning
  assert_success
  assert_equal "$(calls)" "sysctl -q -p $ROOT/etc/sysctl.d/90-pfslab.conf"
  assert_equal "$(cat "$ROOT/sys/kernel/mm/transparent_hugepage/enabled")" never
}

@test "health tuning compares the running kernel with the lab file" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  seed_sysctls
  echo "always madvise [never]" >"$ROOT/sys/kernel/mm/transparent_hugepage/enabled"
  role "$cfg" common health tuning
  assert_success
  assert_output "tuning@mds0: ok (6 sysctls, THP never)"
  echo 1 >"$ROOT/proc/sys/kernel/numa_balancing"
  echo 10 >"$ROOT/proc/sys/vm/dirty_ratio"
  echo "[always] madvise never" >"$ROOT/sys/kernel/mm/transparent_hugepage/enabled"
  role "$cfg" common health tuning
  assert_failure 1
  assert_output "tuning@mds0: vm.dirty_ratio=10 (lab: 20) kernel.numa_balancing=1 (lab: 0) transparent_hugepage=always (lab: never)"
}

@test "numa_balancing and a contradicting kernel.numa_balancing sysctl are refused" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  jq '.os_tuning.sysctl["kernel.numa_balancing"] = 1' "$cfg" >"$cfg.bad"
  role "$cfg.bad" common configure tuning
  assert_failure 2
  assert_output "[common:tuning@mds0] error: os_tuning: numa_balancing is false but sysctl kernel.numa_balancing is 1"
  [ ! -e "$ROOT/etc/sysctl.d/90-pfslab.conf" ]
}

# A node the lab does not tune, as the lab plan writes its config: os_tuning without
# kernel settings (an empty sysctl map, no THP, no NUMA balancing), drop_caches kept.
untuned() {
  jq '.os_tuning = {sysctl: {}, drop_caches: .os_tuning.drop_caches}' "$1" >"$1.untuned" && echo "$1.untuned"
}

@test "a node the lab does not tune (a BeeGFS client) changes no sysctl and drops what an earlier lab left" {
  shim sysctl
  cfg=$(untuned "$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)")
  role "$cfg" common up tuning
  assert_success
  [ ! -e "$ROOT/etc/sysctl.d/90-pfslab.conf" ] && [ ! -e "$ROOT/etc/tmpfiles.d/90-pfslab-thp.conf" ]
  [ -z "$(calls)" ]
  assert_equal "$(cat "$ROOT/sys/kernel/mm/transparent_hugepage/enabled")" "[always] madvise never"
  role "$cfg" common health tuning
  assert_success
  assert_output "tuning@cli0: ok (no kernel tuning for this node: os_tuning.roles names none of its roles)"
  # The node was a tuned server of an earlier lab: its files go, nothing is loaded.
  role "$(node_config beegfs.json cli0 ss 0 10.10.1.1 beegfs-storage)" common configure tuning
  [ -s "$ROOT/etc/sysctl.d/90-pfslab.conf" ] && [ -s "$ROOT/etc/tmpfiles.d/90-pfslab-thp.conf" ]
  role "$cfg" common configure tuning
  assert_success
  [ ! -e "$ROOT/etc/sysctl.d/90-pfslab.conf" ] && [ ! -e "$ROOT/etc/tmpfiles.d/90-pfslab-thp.conf" ]
  [ -z "$(calls)" ]
}

@test "the lab plan of a BeeGFS lab tunes its metadata and storage servers, not its clients or management server" {
  command -v terraform >/dev/null || skip "terraform is not installed (make test installs it); the lab plan cannot be rendered"
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's Python environment is missing: run 'make deps'"
  out=$BATS_TEST_TMPDIR/plan
  run "$KIT/scripts/render-user-data" aws-beegfs-medium aws "$out"
  assert_success
  for node in ss0 mds0 cli0 mgmt0; do
    sed -n "/^cat >\/etc\/pfslab\/node.json <<'PFSLAB_EOF'\$/,/^PFSLAB_EOF\$/p" "$out/$node.sh" | sed '1d;$d' >"$out/$node.json"
    jq -e .node.name "$out/$node.json" >/dev/null
  done
  shim sysctl
  for node in ss0 mds0; do
    rm -rf "$ROOT/etc"
    role "$out/$node.json" common up tuning
    assert_success
    assert_equal "$(grep -c ' = ' "$ROOT/etc/sysctl.d/90-pfslab.conf")" 6
    grep -qx "vm.dirty_ratio = 20" "$ROOT/etc/sysctl.d/90-pfslab.conf"
    assert_equal "$(cat "$ROOT/sys/kernel/mm/transparent_hugepage/enabled")" never
    echo "[always] madvise never" >"$ROOT/sys/kernel/mm/transparent_hugepage/enabled"
  done
  assert_equal "$(calls sysctl | wc -l)" 2
  : >"$SHIM_LOG"
  rm -rf "$ROOT/etc"
  for node in cli0 mgmt0; do
    role "$out/$node.json" common up tuning
    assert_success
    [ ! -e "$ROOT/etc/sysctl.d/90-pfslab.conf" ] && [ ! -e "$ROOT/etc/tmpfiles.d/90-pfslab-thp.conf" ]
    assert_equal "$(cat "$ROOT/sys/kernel/mm/transparent_hugepage/enabled")" "[always] madvise never"
  done
  [ -z "$(calls)" ]
}

ib_node() {
  mkdir -p "$ROOT/sys/class/net/ib0" "$ROOT/sys/class/net/eth0"
  echo 32 >"$ROOT/sys/class/net/ib0/type"
  echo up >"$ROOT/sys/class/net/ib0/operstate"
  echo 1 >"$ROOT/sys/class/net/eth0/type"
  echo up >"$ROOT/sys/class/net/eth0/operstate"
  shim ibv_devinfo 'printf "%s\n" "hca_id:	mlx5_0" "	transport:			InfiniBand (0)" "		port:	1" "			state:			PORT_ACTIVE (4)" \
    "hca_id:	mlx5_1" "		port:	1" "			state:			PORT_DOWN (1)"'
  shim ucx_info 'printf "%s\n" "# Memory domain: mlx5_0" "#      Transport: rc_mlx5" "#         Device: mlx5_0:1" "#      Transport: tcp" "#         Device: eth0"'
}

@test "fabric infiniband: an ACTIVE port, the node's address on IPoIB, UCX on the HCA" {
  ib_node
  echo "3: ib0    inet 10.10.0.1/16 brd 10.10.255.255 scope global ib0" >"$SHIM_STATE/ip"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" common health fabric
  assert_success
  assert_output "fabric@mds0: infiniband ok (ports mlx5_0:1 active, ib0 up with 10.10.0.1, UCX on mlx5_0:1)"
}

@test "fabric infiniband fails when traffic would go over Ethernet or TCP" {
  ib_node
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  echo "2: eth0    inet 10.10.0.1/16 scope global eth0" >"$SHIM_STATE/ip"
  role "$cfg" common health fabric
  assert_failure 1
  assert_output "fabric@mds0: infiniband: 10.10.0.1 is on eth0, which is not an IPoIB interface (storage traffic would use Ethernet)"
  echo "3: ib0    inet 10.10.0.1/16 scope global ib0" >"$SHIM_STATE/ip"
  shim ucx_info 'printf "%s\n" "#      Transport: tcp" "#         Device: eth0"'
  role "$cfg" common health fabric
  assert_failure 1
  assert_output "fabric@mds0: infiniband: UCX sees no mlx device (MPI would fall back to TCP)"
  shim ibv_devinfo 'printf "%s\n" "hca_id:	mlx5_0" "		port:	1" "			state:			PORT_DOWN (1)"'
  role "$cfg" common health fabric
  assert_failure 1
  assert_output "fabric@mds0: infiniband: no port is PORT_ACTIVE (ibv_devinfo)"
}

@test "fabric efa: fi_info lists the efa provider and FI_PROVIDER does not point elsewhere" {
  mkdir -p "$ROOT/sys/class/net/ens5"
  echo up >"$ROOT/sys/class/net/ens5/operstate"
  echo "2: ens5    inet 10.30.0.4/24 scope global ens5" >"$SHIM_STATE/ip"
  shim fi_info 'printf "%s\n" "provider: efa" "    fabric: efa" "    domain: rdmap0s31-rdm"'
  cfg=$(node_config beegfs.json cli0 cli 0 10.30.0.4 beegfs-client)
  jq '.network.fabric = "efa"' "$cfg" >"$cfg.efa"
  role "$cfg.efa" common health fabric
  assert_success
  assert_output "fabric@cli0: efa ok (fi_info -p efa lists the provider, ens5 up with 10.30.0.4)"
  assert_equal "$(calls fi_info)" "fi_info -p efa"
  ROLE_ENV=(FI_PROVIDER=tcp)
  role "$cfg.efa" common health fabric
  assert_failure 1
  assert_output "fabric@cli0: efa: FI_PROVIDER=tcp, not efa (MPI would not use efa)"
  ROLE_ENV=()
  shim fi_info 'echo "fi_getinfo: -61 (No data available)"; exit 61'
  role "$cfg.efa" common health fabric
  assert_failure 1
  assert_output "fabric@cli0: efa: libfabric has no efa provider (fi_info -p efa)"
}

@test "fabric veth/ethernet: the link holding the node's address is up" {
  mkdir -p "$ROOT/sys/class/net/eth0"
  echo down >"$ROOT/sys/class/net/eth0/operstate"
  echo "2: eth0    inet 10.99.0.11/24 scope global eth0" >"$SHIM_STATE/ip"
  cfg=$(node_config ceph.json osd0 osd 0 10.99.0.11 ceph-osd)
  role "$cfg" common health fabric
  assert_failure 1
  assert_output "fabric@osd0: veth: eth0 (holding 10.99.0.11) is not up"
  echo up >"$ROOT/sys/class/net/eth0/operstate"
  role "$cfg" common health fabric
  assert_success
  assert_output "fabric@osd0: veth ok (eth0 up with 10.99.0.11)"
}

@test "bad action or component: one line, exit 2" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" common health kernel
  assert_failure 2
  assert_output "[common:kernel@mds0] error: component 'kernel' is not one of tuning, fabric (usage: common ACTION COMPONENT)"
  role "$cfg" common tune tuning
  assert_failure 2
  assert_output "[common:tuning@mds0] error: action 'tune' is not one of install, configure, start, up, stop, health"
}

@test "the fixtures' filesystem, os_tuning and network sections are valid lab-file settings" {
  [ -x "$KIT/.venv/bin/python" ] || skip "the kit's Python environment is missing (make deps)"
  run "$KIT/.venv/bin/python" - "$KIT/labs/schema.json" "$KIT/labs/local.yaml" "$FIXTURES" <<'PY'
import copy, json, sys, yaml, jsonschema
schema, base = json.load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2]))
for name in ("beegfs", "nfs", "gpfs", "ceph"):
    fx = json.load(open(f"{sys.argv[3]}/{name}.json"))
    lab = copy.deepcopy(base)
    lab.update(filesystem=fx["filesystem"], os_tuning=fx["os_tuning"], network=fx["network"])
    for e in jsonschema.Draft202012Validator(schema).iter_errors(lab):
        print(name, list(e.path), e.message)
PY
  assert_success
  assert_output ""
}

# A controller of the fake /sys: fake_ctrl K NUMA [NAMESPACE-ENTRY...]
fake_ctrl() {
  local ctrl=$ROOT/sys/class/nvme/nvme$1 entry
  mkdir -p "$ctrl/device"
  echo "$2" >"$ctrl/device/numa_node"
  for entry in "${@:3}"; do mkdir -p "$ctrl/$entry"; done
}

nvme_on_numa_here() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" PFSLAB_SYSROOT="$ROOT" PFSLAB_ROOT="$KIT" bash -c \
    'source "$PFSLAB_ROOT/scripts/lib/common.sh"; source "$PFSLAB_ROOT/scripts/lib/roles.sh"; nvme_on_numa "$1"' _ "$1"
}

@test "NVMe drives by NUMA node follow native multipath: the subsystem's block device, once per drive" {
  # With multipath a controller lists its path (nvmeXcKn1); the block device is the
  # subsystem's (nvmeXn1), whose number need not be the controller's.
  fake_ctrl 0 0 nvme1c0n1
  fake_ctrl 1 1 nvme0c1n1
  fake_ctrl 2 0 nvme2c2n1
  # Two paths to one drive: it is one drive.
  fake_ctrl 3 0 nvme3c3n1
  fake_ctrl 4 0 nvme3c4n1
  # Without multipath the namespace is the controller's own.
  fake_ctrl 5 1 nvme5n1
  nvme_on_numa_here 0
  assert_success
  assert_output "/dev/nvme1n1
/dev/nvme2n1
/dev/nvme3n1"
  nvme_on_numa_here 1
  assert_success
  assert_output "/dev/nvme0n1
/dev/nvme5n1"
}
