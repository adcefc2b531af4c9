#!/usr/bin/env bats
# The health watchdog of a run (scripts/watchdog) against a stand-in lab: the role
# checks answer from files the test writes, so each fault is exact and instant. The
# real faults (an MDS or an OSD killed during make bench) are in tests/lab.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  KIT=$BATS_TEST_TMPDIR/kit
  HEALTH=$BATS_TEST_TMPDIR/health
  RUN=$BATS_TEST_TMPDIR/run
  mkdir -p "$KIT/scripts/lib" "$KIT/scripts/local" "$KIT/scripts/roles" "$KIT/families/cephfs" "$KIT/build/wd" "$HEALTH" "$RUN/stage"
  ln -s "$REPO/registry" "$KIT/registry"
  # The watchdog is the kit's command (pfslab/lifecycle/watchdog.py); the script wraps it.
  ln -s "$REPO/.venv" "$KIT/.venv"
  mkdir -p "$KIT/labs" && ln -s "$REPO/labs/schema.json" "$KIT/labs/schema.json"
  ln -s "$REPO/families/cephfs/family.json" "$KIT/families/cephfs/family.json"
  ln -s "$REPO/targets" "$KIT/targets"
  ln -s "$REPO/scripts/watchdog" "$KIT/scripts/watchdog"
  ln -s "$REPO/scripts/lib/common.sh" "$REPO/scripts/lib/ere.sh" "$KIT/scripts/lib/"
  # Nodes are not namespaces here: a role step runs as it is, with the node's config.
  printf '#!/bin/bash\nPFSLAB_NODE_CONFIG=$2 exec "${@:3}"\n' >"$KIT/scripts/local/node-exec"
  # The role answers from $HEALTH/<component>.<node>: "STATUS MESSAGE" (default: healthy).
  cat >"$KIT/families/cephfs/role" <<'EOF'
#!/bin/bash
[[ $1 == essential ]] && { echo "mon mds osd client"; exit 0; }
node=$(jq -r .node "$PFSLAB_NODE_CONFIG")
echo "$2" >>"$HEALTH/calls"
file=$HEALTH/$2.$node
[[ $2 == service ]] && file=$HEALTH/service
[[ -s $file ]] || exit 0
read -r status message <"$file"
echo "$message"
exit "$status"
EOF
  # The scheduler's role answers the same way (it has no `essential` list).
  grep -v essential "$KIT/families/cephfs/role" >"$KIT/scripts/roles/slurm"
  chmod +x "$KIT/scripts/local/node-exec" "$KIT/families/cephfs/role" "$KIT/scripts/roles/slurm"
  local node
  for node in mon0 osd0 osd1 cli0; do
    mkdir -p "$BATS_TEST_TMPDIR/nodes/$node"
    echo "{\"node\": \"$node\"}" >"$BATS_TEST_TMPDIR/nodes/$node/node.json"
  done
  jq -n --arg s "$BATS_TEST_TMPDIR" '{
    target: "local", clients: ["cli0"], filesystem: {mount: "/nonexistent/pfslab-wd"},
    local: {state_root: $s, netns: {mon0: "wd-mon0", osd0: "wd-osd0", osd1: "wd-osd1", cli0: "wd-cli0"}},
    nodes: [{name: "mon0", roles: ["ceph-mon", "ceph-mds"]}, {name: "osd0", roles: ["ceph-osd"]},
            {name: "osd1", roles: ["ceph-osd"]}, {name: "cli0", roles: ["ceph-client", "slurm-controller", "slurm-node"]}]}' >"$KIT/build/wd/inventory.json"
  export HEALTH PFSLAB_ROOT=$KIT
}

# A stand-in bench: the watchdog ends with it. Its pid is in BENCH.
start_bench() {
  sleep 600 &
  BENCH=$!
}

watch() {
  PFSLAB_WATCHDOG_CALL_TIMEOUT=5 "$KIT/scripts/watchdog" wd "$RUN" "$BENCH" 1 2>"$BATS_TEST_TMPDIR/watchdog.log" &
  WATCHDOG=$!
}

# A bench of a few seconds on a healthy lab, watched to its end: nothing is recorded.
healthy_run_watched() {
  start_bench
  watch
  sleep 3
  kill "$BENCH"
  wait "$WATCHDOG"
  assert [ ! -e "$RUN/lab-health.json" ]
}

teardown() {
  kill "${BENCH:-}" "${WATCHDOG:-}" "${STAGED:-}" 2>/dev/null || true
}

@test "a healthy lab: the watchdog writes nothing and ends with the bench" {
  healthy_run_watched
  run cat "$BATS_TEST_TMPDIR/watchdog.log"
  assert_output ""
}

@test "the only MDS down: unhealthy on the second reading, the run's processes ended, the watchdog exits" {
  start_bench
  (cd "$RUN/stage" && exec sleep 600) &
  STAGED=$!
  echo "1 ceph-mds.mon0: not running" >"$HEALTH/mds.mon0"
  echo "1 ceph: no MDS is active, the file system is offline" >"$HEALTH/service"
  watch
  wait "$WATCHDOG"
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "every ceph-mds of the lab is down"
  assert_line --index 1 --partial "ceph: no MDS is active"
  run kill -0 "$STAGED"
  assert_failure  # a process working in the run's stage was ended
  run cat "$BATS_TEST_TMPDIR/watchdog.log"
  assert_line --index 0 --partial "looks unhealthy"
  assert_output --partial "no benchmark process is left on any node"
  run kill -0 "$BENCH"
  assert_success  # the bench itself goes on to write its verdict
}

@test "one reading of a fault that passes is not acted on" {
  start_bench
  echo "1 ceph: no MDS is active, the file system is offline" >"$HEALTH/service"
  watch
  # The second reading comes 5 s after the first: the fault is gone by then.
  for _ in $(seq 50); do grep -q "looks unhealthy" "$BATS_TEST_TMPDIR/watchdog.log" && break; sleep 0.1; done
  rm "$HEALTH/service"
  sleep 7
  kill "$BENCH"
  wait "$WATCHDOG"
  assert [ ! -e "$RUN/lab-health.json" ]
}

@test "a client whose mount hangs is a fault of the run" {
  start_bench
  echo "1 ceph-client@cli0: /mnt does not answer" >"$HEALTH/client.cli0"
  watch
  wait "$WATCHDOG"
  run jq -r .detail "$RUN/lab-health.json"
  assert_output --partial "cli0: ceph-client@cli0: /mnt does not answer"
}

@test "a dead slurmd is a fault of the run, naming the node (its jobs cannot run)" {
  start_bench
  echo "1 slurm-node@cli0: slurmd is not running" >"$HEALTH/node.cli0"
  watch
  wait "$WATCHDOG"
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "cli0: slurm-node@cli0: slurmd is not running"
}

@test "one OSD of two down while the pools serve: degraded, written once, and the watch goes on" {
  start_bench
  echo "1 ceph-osd.1: not running" >"$HEALTH/osd.osd1"
  echo "3 ceph: 1/2 OSDs up, data is degraded (the pools still serve)" >"$HEALTH/service"
  watch
  # Its first reading, however long a loaded machine makes it; then readings go on.
  for _ in $(seq 600); do [[ -s $RUN/lab-health.json ]] && break; sleep 0.1; done
  sleep 3
  run kill -0 "$WATCHDOG"
  assert_success
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 degraded
  assert_line --index 1 --partial "osd1: ceph-osd.1: not running"
  assert_equal "$(grep -c 'is degraded' "$BATS_TEST_TMPDIR/watchdog.log")" 1
  # Both OSDs down: every instance of an essential role is gone, the run must end.
  echo "1 ceph-osd.0: not running" >"$HEALTH/osd.osd0"
  wait "$WATCHDOG"
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "every ceph-osd of the lab is down"
}

# The stand-in lab for quick readings: its daemons' pid files under a run root, and no
# client mount to look for (the stand-in has none).
quick_lab() {
  mkdir -p "$BATS_TEST_TMPDIR/runroot/mon0"
  jq --arg r "$BATS_TEST_TMPDIR/runroot" '.local.run_root = $r | .clients = []' "$KIT/build/wd/inventory.json" \
    >"$BATS_TEST_TMPDIR/inv" && mv "$BATS_TEST_TMPDIR/inv" "$KIT/build/wd/inventory.json"
}

@test "quick readings ask no role, the first one included (make bench checked the lab just before)" {
  quick_lab
  start_bench
  PFSLAB_WATCHDOG_FULL_EVERY=1000 watch
  # A reading a second for 5 s, every one quick.
  sleep 5
  kill "$BENCH"
  wait "$WATCHDOG"
  assert [ ! -e "$HEALTH/calls" ]
  assert [ ! -e "$RUN/lab-health.json" ]
}

@test "a daemon a quick reading finds gone is judged by a full one: the only MDS down ends the run" {
  quick_lab
  sleep 600 &
  MDS=$!
  echo "$MDS" >"$BATS_TEST_TMPDIR/runroot/mon0/ceph-mds.mon0.pid"
  start_bench
  PFSLAB_WATCHDOG_FULL_EVERY=1000 watch
  # The first readings (quick) find it; then the MDS goes.
  sleep 1.5
  kill "$MDS"
  echo "1 ceph-mds.mon0: not running" >"$HEALTH/mds.mon0"
  for _ in $(seq 150); do kill -0 "$WATCHDOG" 2>/dev/null || break; sleep 0.1; done
  run kill -0 "$WATCHDOG"
  assert_failure  # it ended the run, in seconds, not at the next full reading
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "every ceph-mds of the lab is down"
}

@test "bad arguments: one line, exit 2" {
  run "$KIT/scripts/watchdog" wd "$RUN"
  assert_failure 2
  assert_output "[watchdog] error: usage: watchdog LAB RUN_DIR WATCHED_PID [INTERVAL_S]"
  run "$KIT/scripts/watchdog" nope "$RUN" 1
  assert_failure 2
  assert_output --partial "lab nope is not up"
  run "$KIT/scripts/watchdog" wd "$RUN" 1 0
  assert_failure 2
  assert_output "[watchdog] error: INTERVAL_S=0 is not allowed; give whole seconds, at least 1"
}

# A site lab (target site, Slurm): its health is what sinfo says of its nodes, and its
# run's jobs are cancelled through scancel. sinfo, squeue and scancel are stand-ins
# answering from files the test writes; the judging is the kit's (pfslab site health).
site_lab() {
  mkdir -p "$KIT/bin"
  jq -n '{name: "wd", target: "site", scheduler: {type: "slurm", partition: "p"},
    targets: {site: {nodes: ["cli0", "cli1"]}}}' >"$KIT/build/wd/lab.json"
  jq -n '{target: "site", clients: ["cli0", "cli1"], scheduler: {type: "slurm", partition: "p"}}' >"$KIT/build/wd/inventory.json"
  printf 'cli0|idle|none\ncli1|allocated|none\n' >"$HEALTH/sinfo"
  printf '#!/bin/bash\ncat "$HEALTH/sinfo"\n' >"$KIT/bin/sinfo"
  # squeue lists the jobs in $HEALTH/squeue ("id STATE workdir"); scancel records its
  # arguments and empties the queue (or, with $HEALTH/stuck, leaves it as it is).
  printf '#!/bin/bash\n[[ $* == *"--user=$(id -un)"* ]] || exit 1\ncat "$HEALTH/squeue" 2>/dev/null || true\n' >"$KIT/bin/squeue"
  printf '#!/bin/bash\necho "$@" >>"$HEALTH/scancel.args"\n[[ -e $HEALTH/stuck ]] || rm -f "$HEALTH/squeue"\n' >"$KIT/bin/scancel"
  chmod +x "$KIT/bin/"*
  export PATH=$KIT/bin:$PATH
}

@test "a site lab whose nodes all answer Slurm: nothing written, the watch ends with the bench" {
  site_lab
  healthy_run_watched
  assert [ ! -e "$HEALTH/scancel.args" ]
}

@test "a site lab's node that stops answering Slurm: unhealthy naming it, the run's jobs cancelled, its processes ended" {
  site_lab
  start_bench
  (cd "$RUN/stage" && exec sleep 600) &
  STAGED=$!
  # Two jobs of the run and one of the same user's other work, which is left alone.
  printf '41 RUNNING %s/stage/site/clients/pfslab/IorTest\n42 PENDING %s/stage/x\n7 RUNNING /home/u/other\n' \
    "$RUN" "$RUN" >"$HEALTH/squeue"
  printf 'cli0|allocated|none\ncli1|allocated*|none\n' >"$HEALTH/sinfo"
  watch
  wait "$WATCHDOG"
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "node cli1: not responding to the Slurm controller"
  refute_output --partial "cli0"
  assert_equal "$(cat "$HEALTH/scancel.args")" "41 42"
  run kill -0 "$STAGED"
  assert_failure
  run cat "$BATS_TEST_TMPDIR/watchdog.log"
  # The controller's judgement is acted on at the first reading.
  refute_output --partial "looks unhealthy"
  assert_output --partial "cancelling the run's Slurm jobs: 41 42"
  assert_output --partial "no benchmark process is left on any node"
}

@test "a site lab's jobs that Slurm does not end: the watchdog says which, after its wait" {
  site_lab
  start_bench
  printf '41 COMPLETING %s/stage/a\n' "$RUN" >"$HEALTH/squeue"
  touch "$HEALTH/stuck"
  printf 'cli0|down*|Not responding\ncli1|idle|none\n' >"$HEALTH/sinfo"
  PFSLAB_WATCHDOG_SITE_END_WAIT=2 watch
  wait "$WATCHDOG"
  run cat "$BATS_TEST_TMPDIR/watchdog.log"
  assert_output --partial "still in Slurm's queue after 2 s: 41 COMPLETING"
  refute_output --partial "no benchmark process is left"
  run jq -r .detail "$RUN/lab-health.json"
  assert_output --partial "node cli0: not responding to the Slurm controller (its slurmd is gone or unreachable), state down"
}

@test "a site lab's controller that does not answer: read twice, then unhealthy (the watch is blind)" {
  site_lab
  start_bench
  printf '#!/bin/bash\necho "sinfo: error: Unable to contact slurm controller" >&2\nexit 1\n' >"$KIT/bin/sinfo"
  watch
  wait "$WATCHDOG"
  run cat "$BATS_TEST_TMPDIR/watchdog.log"
  assert_line --index 0 --partial "looks unhealthy"
  run jq -r .detail "$RUN/lab-health.json"
  assert_output "the Slurm controller did not answer: sinfo: sinfo: error: Unable to contact slurm controller"
}

@test "a site lab's node lost between two readings is read once more when the bench ends (TERM)" {
  site_lab
  start_bench
  "$KIT/scripts/watchdog" wd "$RUN" "$BENCH" 60 2>"$BATS_TEST_TMPDIR/watchdog.log" &
  WATCHDOG=$!
  sleep 3  # the first reading (healthy) is done; the next is a minute away
  printf 'cli0|idle|none\ncli1|idle*|none\n' >"$HEALTH/sinfo"
  start=$SECONDS
  kill -TERM "$WATCHDOG"
  wait "$WATCHDOG"
  assert [ $((SECONDS - start)) -lt 10 ]
  run jq -r '.state, .detail' "$RUN/lab-health.json"
  assert_line --index 0 unhealthy
  assert_line --index 1 --partial "node cli1: not responding"
}
