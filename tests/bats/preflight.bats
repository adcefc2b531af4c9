#!/usr/bin/env bats
# shellcheck disable=SC2016
# scripts/preflight against an ssh shim: the exact remote commands per node and role,
# one PASS/FAIL line per check, and nothing remote for the local target.

load helpers

setup() {
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  mkdir -p "$BUILD/beegfs-small" "$BUILD/local"
  jq -n '{lab: "beegfs-small", target: "baremetal", nodes: [
    {name: "mgmt0", group: "mgmt", roles: ["beegfs-mgmt"], address: "10.10.0.9"},
    {name: "mds0", group: "mds", roles: ["beegfs-meta", "beegfs-storage"], address: "10.10.0.1"},
    {name: "cli0", group: "cli", roles: ["beegfs-client"], address: "10.10.1.1"}]}' >"$BUILD/beegfs-small/inventory.json"
  jq -n '{lab: "local", target: "local", nodes: [{name: "mon0", roles: ["ceph-mon"], address: "10.99.0.10"}]}' \
    >"$BUILD/local/inventory.json"
  # The lab's one SSH config (scripts/lib/remote.sh writes it at remote-up).
  mkdir -p "$BUILD/beegfs-small/ssh"
  echo "Host *" >"$BUILD/beegfs-small/ssh/config"
  # Every remote check passes and prints a line, except the storage health of mds0.
  shim ssh '
cmd=${!#}; host=${@: -2:1}
if [[ $host == mds0 && $cmd == *"beegfs health storage" ]]; then
  echo "beegfs-storage@mds0: /dev/nvme13n1 uses LBA format 0, not the 4096-byte format 1"; exit 1
fi
echo "ok: ${cmd##*/roles/} on $host"'
}

preflight() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/preflight" "$@"
}

@test "a bare-metal lab: fabric on every node, tuning on servers, every role, then the cluster" {
  preflight beegfs-small
  assert_failure 1
  run calls ssh
  r="PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles"
  o="ssh -F $BUILD/beegfs-small/ssh/config -n"
  assert_output "$o mgmt0 $r/common health fabric
$o mgmt0 $r/common health tuning
$o mgmt0 $r/beegfs health mgmt
$o mds0 $r/common health fabric
$o mds0 $r/common health tuning
$o mds0 $r/beegfs health meta
$o mds0 $r/beegfs health storage
$o cli0 $r/common health fabric
$o cli0 $r/beegfs health client
$o mgmt0 $r/beegfs health cluster"
}

@test "one line per check, FAIL where a node's check fails, a summary, exit 1" {
  preflight beegfs-small
  assert_failure 1
  assert_line --index 0 "lab beegfs-small (baremetal): preflight of 3 nodes over ssh"
  assert_line "PASS mgmt0      fabric           ok: common health fabric on mgmt0"
  assert_line "FAIL mds0       beegfs-storage   beegfs-storage@mds0: /dev/nvme13n1 uses LBA format 0, not the 4096-byte format 1"
  assert_line "PASS cli0       beegfs-client    ok: beegfs health client on cli0"
  assert_line "preflight: 1 check(s) failed; fix them before benchmarking lab beegfs-small"
  [ "$(grep -c '^PASS' <<<"$output")" -eq 9 ]
}

@test "all checks passing exits 0; the remote paths come from the environment" {
  shim ssh 'echo fine'
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" \
    PFSLAB_REMOTE_ROOT=/srv/kit PFSLAB_REMOTE_CONFIG=/srv/node.json "$KIT/scripts/preflight" beegfs-small
  assert_success
  assert_line "preflight: every check passed on lab beegfs-small"
  assert_equal "$(calls ssh | head -n 1)" "ssh -F $BUILD/beegfs-small/ssh/config -n mgmt0 PFSLAB_NODE_CONFIG=/srv/node.json /srv/kit/scripts/roles/common health fabric"
}

@test "an unreachable node is a FAIL naming ssh" {
  shim ssh 'echo "ssh: connect to host ${@: -2:1} port 22: No route to host" >&2; exit 255'
  preflight beegfs-small
  assert_failure 1
  assert_line "FAIL mgmt0      fabric           ssh to mgmt0 (10.10.0.9) failed: ssh: connect to host mgmt0 port 22: No route to host"
}

@test "a remote lab without its SSH config: one line, no ssh" {
  rm "$BUILD/beegfs-small/ssh/config"
  preflight beegfs-small
  assert_failure 2
  assert_output "[preflight] error: lab beegfs-small has no SSH config ($BUILD/beegfs-small/ssh/config); run 'make remote-up LAB=beegfs-small'"
  [ -z "$(calls ssh)" ]
}

@test "the local target: nothing remote, and it says so" {
  preflight local
  assert_success
  assert_output "lab local: local target; nothing remote to check (the nodes are namespaces of this host, 'scripts/lab status' checks them)"
  [ -z "$(calls)" ]
}

@test "no inventory, or no active lab: one line, exit 2" {
  preflight nss73-ha
  assert_failure 2
  assert_output "[preflight] error: lab nss73-ha is not up (no $BUILD/nss73-ha/inventory.json); run 'make lab-up LAB=nss73-ha'"
  preflight
  assert_failure 2
  assert_output "[preflight] error: no lab is up; run 'make lab-up LAB=<lab>' first or name the lab"
  echo beegfs-small >"$BUILD/active-lab"
  shim ssh 'echo fine'
  preflight
  assert_success
}

# ---- MPI over the lab's fabric: two ranks per client pair, from the login node ----------

# A lab with three clients: pairs cli0+cli1 and cli2+cli0, probed from the login node.
three_clients() {
  jq '.nodes += [{name: "cli1", group: "cli", roles: ["beegfs-client"], address: "10.10.1.2"},
                 {name: "cli2", group: "cli", roles: ["beegfs-client"], address: "10.10.1.3"}]
      | .clients = ["cli0", "cli1", "cli2"] | .login = "cli0"
      | .launcher = {mpirun: "mpirun -machinefile {hostfile} --map-by node -np {np} -mca pml ucx", env: {RSH: "ssh"}}' \
    "$BUILD/beegfs-small/inventory.json" >"$BUILD/beegfs-small/inv.new"
  mv "$BUILD/beegfs-small/inv.new" "$BUILD/beegfs-small/inventory.json"
}

# ssh runs the login node's `pfslab fabric-probe` here, for real, on this build's
# inventory; every other remote check passes. mpirun and ior are shims below.
probe_over_ssh() {
  shim ssh '
cmd=${!#}
if [[ $cmd == *"pfslab fabric-probe "* ]]; then
  read -r lab a b <<<"${cmd##*fabric-probe }"
  exec "$KIT/.venv/bin/pfslab" fabric-probe "$lab" "$a" "$b" --inventory "$PROBE_BUILD/$lab/inventory.json"
fi
echo fine'
  shim ior
}

# mpirun prints what Open MPI 5 prints with the probe's verbose settings: $MODE says
# what each rank selects (ucx: pml ucx over rc_mlx5; tcp: pml ob1 with btl tcp).
mpirun_shim() {
  shim mpirun '
hosts=$(awk "{print \$1}" "$(awk "{for (i = 1; i < NF; i++) if (\$i == \"-machinefile\") print \$(i + 1)}" <<<"$*")")
env | grep -E "^(OMPI_MCA_|UCX_LOG_LEVEL|RSH)" | sort >>"$SHIM_STATE/mpirun.env"
for h in $hosts; do
  case $MODE in
    ucx) echo "[$h:4242] select: initializing pml component ucx"
         echo "[$h:4242] select: component ucx selected"
         echo "[1700000000.1] [$h:4242:0] ucp_worker.c:1888 UCX  INFO  ep_cfg[1]: tag(self/memory cma/memory rc_mlx5/mlx5_0:1)" ;;
    tcp) echo "[$h:4242] select: init of component self returned success"
         echo "[$h:4242] select: init of component tcp returned success"
         echo "[$h:4242] select: component ob1 selected" ;;
  esac
done
[[ $MODE != fail ]] || { echo "No components were able to be opened in the pml framework." >&2; exit 1; }'
}

# PFSLAB_TOOL_PATH: the shims before any IOR this checkout's `make tools` built (CI builds
# them while these tests run).
probe_preflight() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" PFSLAB_TOOL_PATH="$SHIMS" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_BUILD="$BUILD" \
    PROBE_BUILD="$BUILD" KIT="$KIT" MODE="$1" HOME="$BATS_TEST_TMPDIR" "$KIT/scripts/preflight" beegfs-small
}

@test "MPI: every client is in a pair, probed from the login node with the lab's name" {
  three_clients
  shim ssh 'cmd=${!#}; [[ $cmd == *fabric-probe* ]] && echo "MPI between a and b uses the infiniband fabric: ..."; echo fine'
  preflight beegfs-small
  assert_success
  run calls ssh
  assert_line "ssh -F $BUILD/beegfs-small/ssh/config -n cli0 cd /opt/pfslab && .venv/bin/pfslab fabric-probe beegfs-small cli0 cli1"
  assert_line "ssh -F $BUILD/beegfs-small/ssh/config -n cli0 cd /opt/pfslab && .venv/bin/pfslab fabric-probe beegfs-small cli2 cli0"
  [ "$(calls ssh | grep -c fabric-probe)" -eq 2 ]
}

@test "MPI: UCX on the HCA between the pair passes, and the probe ran with the lab's launcher" {
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's .venv is missing (make deps)"
  three_clients
  probe_over_ssh
  mpirun_shim
  probe_preflight ucx
  assert_success
  assert_line "PASS cli0,cli1  mpi-fabric       MPI between cli0 and cli1 uses the infiniband fabric: cli0: pml ucx over cma/memory,rc_mlx5/mlx5_0:1; cli1: pml ucx over cma/memory,rc_mlx5/mlx5_0:1"
  assert_line --partial "PASS cli2,cli0  mpi-fabric       MPI between cli2 and cli0 uses the infiniband fabric"
  run calls mpirun
  assert_line --index 0 --regexp "^mpirun -machinefile /tmp/pfslab-fabric-[^/]+/hosts --map-by node -np 2 -mca pml ucx $SHIMS/ior -a DUMMY -w -r -t 1k -b 1k -i 1\$"
  run sort -u "$SHIM_STATE/mpirun.env"
  assert_output "OMPI_MCA_btl_base_verbose=10
OMPI_MCA_opal_common_ofi_verbose=1
OMPI_MCA_pml_base_verbose=10
RSH=ssh
UCX_LOG_LEVEL=info"
}

@test "MPI: a TCP fallback on InfiniBand fails in one line naming the pair and what was selected" {
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's .venv is missing (make deps)"
  three_clients
  probe_over_ssh
  mpirun_shim
  probe_preflight tcp
  assert_failure 1
  assert_line "FAIL cli0,cli1  mpi-fabric       MPI between cli0 and cli1 does NOT use the infiniband fabric: cli0: pml ob1 with btl tcp; cli1: pml ob1 with btl tcp (wanted pml ucx on the HCA)"
  assert_line "preflight: 2 check(s) failed; fix them before benchmarking lab beegfs-small"
}

@test "MPI: a probe that cannot start its ranks fails with Open MPI's last line" {
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's .venv is missing (make deps)"
  three_clients
  probe_over_ssh
  mpirun_shim
  probe_preflight fail
  assert_failure 1
  assert_line "FAIL cli0,cli1  mpi-fabric       MPI between cli0 and cli1: the two-rank probe failed (exit 1): No components were able to be opened in the pml framework."
}

@test "MPI: a login node with no ior or mpirun: SKIP with the reason, not a pass and not a failure" {
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's .venv is missing (make deps)"
  three_clients
  probe_over_ssh
  rm "$SHIMS/ior"
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_BUILD="$BUILD" \
    PROBE_BUILD="$BUILD" KIT="$KIT" PFSLAB_VIEW="$BATS_TEST_TMPDIR/no-view" HOME="$BATS_TEST_TMPDIR" "$KIT/scripts/preflight" beegfs-small
  assert_success
  assert_line "SKIP cli0,cli1  mpi-fabric       no MPI to probe between cli0 and cli1: ior is not installed (the toolchain view, PFSLAB_TOOL_PATH or PATH): the probe runs ior -a DUMMY; 'make toolchain' installs it"
  assert_line --partial "SKIP cli2,cli0  mpi-fabric       no MPI to probe between cli2 and cli0"
  refute_line --partial "PASS cli0,cli1  mpi-fabric"
  shim ior
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_BUILD="$BUILD" \
    PROBE_BUILD="$BUILD" KIT="$KIT" PFSLAB_VIEW="$BATS_TEST_TMPDIR/no-view" HOME="$BATS_TEST_TMPDIR" "$KIT/scripts/preflight" beegfs-small
  assert_success
  assert_line --partial "SKIP cli0,cli1  mpi-fabric       no MPI to probe between cli0 and cli1: mpirun is not installed"
}

@test "MPI: a lab with one client says there is no pair" {
  preflight beegfs-small
  assert_line "SKIP cli0       mpi-fabric       lab beegfs-small has fewer than two clients: no pair for a two-rank test"
}
