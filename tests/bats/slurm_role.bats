#!/usr/bin/env bats
# The slurm role for real on this machine: a one-node cluster (slurmctld, slurmd and
# munged, all in a scratch state directory, bound to 127.0.0.1 on ports chosen free; a
# host of its own, as bare metal is: the local lab's namespaces are tested by its lab)
# runs an ordinary user's srun and sbatch jobs, writes their job-completion records,
# notices a killed slurmd (naming the node) and stops leaving no process.
# Needs root (munged runs as munge, jobs as another user) and Debian's slurm-wlm and
# munge (`scripts/deps test` installs them).

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
ROLE=$REPO/scripts/roles/slurm
# The ordinary user the jobs run as: made for the test when absent, removed after it.
# Its own name: another test file (site_lab.bats) makes and removes its user at the same time.
JOB_USER=pfslab-slurm-role

# Why this machine cannot run the test (empty: it can).
unavailable() {
  [[ $(id -u) -eq 0 ]] || { echo "needs root (munged runs as munge, jobs as $JOB_USER)"; return; }
  local cmd
  for cmd in slurmctld slurmd srun sbatch sinfo scontrol munged unshare runuser; do
    command -v "$cmd" >/dev/null || { echo "$cmd is missing (scripts/deps test installs slurm-wlm and munge)"; return; }
  done
  id munge >/dev/null 2>&1 || echo "the munge user is missing (Debian's munge package makes it)"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

setup_file() {
  local why
  why=$(unavailable)
  if [[ -n $why ]]; then
    echo "$why" >"$BATS_FILE_TMPDIR/skip"
    return 0
  fi
  # Under /tmp, not bats' private temp dir: munged and the job's user must reach it.
  SCRATCH=$(mktemp -d /tmp/pfslab-slurm.XXXXXX)
  chmod 755 "$SCRATCH"
  export SCRATCH
  echo "$SCRATCH" >"$BATS_FILE_TMPDIR/scratch"
  if ! id "$JOB_USER" >/dev/null 2>&1; then
    useradd --no-create-home --shell /bin/sh "$JOB_USER"
    touch "$BATS_FILE_TMPDIR/made-user"
  fi
  mkdir -p "$SCRATCH/work"
  chown "$JOB_USER:" "$SCRATCH/work"
  jq -n --arg s "$SCRATCH" --argjson cp "$(free_port)" --argjson dp "$(free_port)" '{
    lab: "slurm.test+1", target: "baremetal", machine_kind: "host",
    node: {name: "cli0", group: "cli", index: 0, address: "127.0.0.1", roles: ["slurm-controller", "slurm-node"]},
    scheduler: {type: "slurm", slurmctld_port: $cp, slurmd_port: $dp},
    network: {subnet: "127.0.0.0/8"},
    cluster: {first: {"slurm-controller": "cli0", "slurm-node": "cli0"},
              nodes: [{name: "cli0", address: "127.0.0.1", roles: ["slurm-controller", "slurm-node"], cpus: 1}]},
    paths: {state: "\($s)/state", run: "\($s)/run", log: "\($s)/log", cluster: "\($s)/cluster"}
  }' >"$SCRATCH/node.json"
}

# Every process of the test's cluster ends, whatever failed: its daemons name the
# scratch directory on their command lines, job steps in their environment.
teardown_file() {
  [[ -s $BATS_FILE_TMPDIR/scratch ]] || return 0
  local scratch pid
  scratch=$(<"$BATS_FILE_TMPDIR/scratch")
  for pid in $(pgrep -f -- "$scratch" || true) $(stepd_pids "$scratch"); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  [[ -e $BATS_FILE_TMPDIR/made-user ]] && userdel "$JOB_USER" 2>/dev/null
  rm -rf "$scratch"
}

stepd_pids() {
  local pid
  for pid in $(pgrep -x slurmstepd || true); do
    grep -qzF -- "$1" "/proc/$pid/environ" 2>/dev/null && echo "$pid"
  done
  return 0
}

setup() {
  [[ ! -s $BATS_FILE_TMPDIR/skip ]] || skip "$(<"$BATS_FILE_TMPDIR/skip")"
  SCRATCH=$(<"$BATS_FILE_TMPDIR/scratch")
  export PFSLAB_ROOT=$REPO PFSLAB_NODE_CONFIG=$SCRATCH/node.json
  export SLURM_CONF=$SCRATCH/state/slurm/slurm.conf
}

as_user() { (cd "$SCRATCH/work" && runuser -u "$JOB_USER" -- env SLURM_CONF="$SLURM_CONF" "$@"); }

# The job-completion record of job $1, once it is written (slurmctld writes it when the
# job ends).
jobcomp_line() {
  local n
  for n in $(seq 60); do
    grep -m 1 "^JobId=$1 " "$SCRATCH/state/slurm/jobcomp.log" 2>/dev/null && return 0
    sleep 0.5
  done
  return 1
}

@test "configure: the lab's munge key (400, munge's), slurm.conf on the lab's address and ports" {
  run "$ROLE" configure controller
  assert_success
  run "$ROLE" configure node
  assert_success
  assert_equal "$(stat -c '%U %a' "$SCRATCH/cluster/munge.key")" "munge 400"
  assert_equal "$(stat -c %s "$SCRATCH/cluster/munge.key")" 1024
  conf=$SCRATCH/state/slurm/slurm.conf
  assert_equal "$(stat -c %a "$conf")" 644
  run grep -E '^(ClusterName|SlurmctldHost|SlurmctldPort|SlurmdPort|ProctrackType|TaskPlugin|JobCompType|JobCompLoc|NodeName|PartitionName)=' "$conf"
  assert_line "ClusterName=slurm_test_1"
  assert_line "SlurmctldHost=cli0(127.0.0.1)"
  assert_line "SlurmctldPort=$(jq .scheduler.slurmctld_port "$PFSLAB_NODE_CONFIG")"
  assert_line "ProctrackType=proctrack/linuxproc"
  assert_line "TaskPlugin=task/none"
  assert_line "JobCompType=jobcomp/filetxt"
  assert_line "JobCompLoc=$SCRATCH/state/slurm/jobcomp.log"
  assert_line "NodeName=cli0 NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN"
  assert_line "PartitionName=slurm_test_1 Nodes=cli0 Default=YES MaxTime=INFINITE State=UP"
  # Made once: a second configure keeps the key.
  sum=$(sha256sum <"$SCRATCH/cluster/munge.key")
  run "$ROLE" configure controller
  assert_success
  assert_equal "$(sha256sum <"$SCRATCH/cluster/munge.key")" "$sum"
  # A network namespace (machine_kind netns: the local lab's nodes, whatever the target's
  # name) shares the host's name, so slurmd there does not bind what it resolves to.
  mkdir -m 755 "$SCRATCH/netns"
  jq --arg d "$SCRATCH/netns" '.machine_kind = "netns" | .paths.state = ($d + "/state") | .paths.cluster = ($d + "/cluster")' \
    "$PFSLAB_NODE_CONFIG" >"$SCRATCH/netns.json"
  PFSLAB_NODE_CONFIG=$SCRATCH/netns.json run "$ROLE" configure controller
  assert_success
  run grep -c NoInAddrAny "$SCRATCH/netns/state/slurm/slurm.conf"
  assert_output 0
  # A config without the node's kind is refused, naming the field.
  jq 'del(.machine_kind)' "$SCRATCH/netns.json" >"$SCRATCH/kindless.json"
  PFSLAB_NODE_CONFIG=$SCRATCH/kindless.json run "$ROLE" configure controller
  assert_failure
  assert_output --partial "$SCRATCH/kindless.json has no machine_kind (the lab plan writes it"
}

@test "a controller whose name resolves to its address binds slurmctld to it (NoCtldInAddrAny)" {
  addr=$(getent hosts "$(hostname)" | awk '{print $1; exit}')
  [[ -n $addr ]] || skip "this machine's name $(hostname) does not resolve"
  other=$SCRATCH/named.json
  mkdir -m 755 "$SCRATCH/named"
  jq --arg h "$(hostname)" --arg a "$addr" --arg d "$SCRATCH/named" '
    .node.name = $h | .node.address = $a | .cluster.first["slurm-controller"] = $h
    | .cluster.nodes = [{name: $h, address: $a, roles: ["slurm-controller", "slurm-node"]}]
    | .paths.state = ($d + "/state") | .paths.cluster = $d + "/cluster"' "$PFSLAB_NODE_CONFIG" >"$other"
  PFSLAB_NODE_CONFIG=$other run "$ROLE" configure controller
  assert_success
  run grep -x 'CommunicationParameters=NoCtldInAddrAny,NoInAddrAny' "$SCRATCH/named/state/slurm/slurm.conf"
  assert_success
  # No CPUs declared: this machine's.
  run grep -x "NodeName=$(hostname) NodeAddr=$addr CPUs=$(nproc) State=UNKNOWN" "$SCRATCH/named/state/slurm/slurm.conf"
  assert_success
  run grep -x 'CommunicationParameters=NoInAddrAny' "$SCRATCH/state/slurm/slurm.conf"
  assert_success
}

@test "a node without the key is refused in one line naming who makes it" {
  other=$SCRATCH/other.json
  jq --arg c "$SCRATCH/other-cluster" '.node.name = "cli1" | .paths.cluster = $c | .paths.state = ($c + "-state")' \
    "$PFSLAB_NODE_CONFIG" >"$other"
  PFSLAB_NODE_CONFIG=$other run "$ROLE" configure node
  assert_failure 2
  assert_output --partial "munge.key is missing on cli1; the kit makes it with the bootstrap node's cluster files"
}

@test "start: munged (as munge), slurmctld and slurmd up, slurmd bound to 127.0.0.1 only; health passes" {
  run "$ROLE" start controller
  assert_success
  run "$ROLE" start node
  assert_success
  # Every daemon's pid file is directly in paths.run, where the watchdog looks for the
  # daemons it must spare; munged runs as munge.
  for d in munged slurmctld slurmd; do
    pid=$(<"$SCRATCH/run/$d.pid")
    assert_equal "$(ps -o comm= -p "$pid")" "$d"
  done
  assert_equal "$(ps -o user= -p "$(<"$SCRATCH/run/munged.pid")")" munge
  # slurmd on the node's address only; slurmctld on every address of its node, as
  # cli0 does not resolve here (the next test has a controller whose name does).
  port=$(jq .scheduler.slurmd_port "$PFSLAB_NODE_CONFIG")
  run ss -Hltn "sport = :$port"
  assert_output --regexp "^LISTEN .* 127\.0\.0\.1:$port "
  refute_output --partial "0.0.0.0:$port"
  port=$(jq .scheduler.slurmctld_port "$PFSLAB_NODE_CONFIG")
  run ss -Hltn "sport = :$port"
  assert_output --partial ":$port "
  # slurmd registers within a few seconds of starting.
  for _ in $(seq 40); do "$ROLE" health cluster >/dev/null 2>&1 && break; sleep 0.5; done
  run "$ROLE" health cluster
  assert_success
  assert_output "slurm-controller@cli0: cluster slurm_test_1 up, 1 node(s) of partition slurm_test_1 answering"
  run "$ROLE" health node
  assert_success
  # Idempotent: starting again starts nothing.
  run "$ROLE" start controller
  assert_success
  refute_output --partial starting
}

@test "an ordinary user's srun and sbatch jobs run and are recorded in the job-completion log" {
  run as_user srun -N1 hostname
  assert_success
  assert_output "$(hostname)"
  run as_user sbatch --parsable -o "$SCRATCH/work/job.out" --wrap 'id -un'
  assert_success
  job=$output
  run jobcomp_line "$job"
  assert_success
  assert_output --regexp "UserId=$JOB_USER\($(id -u "$JOB_USER")\)"
  assert_output --partial "JobState=COMPLETED"
  assert_output --partial "NodeList=cli0"
  assert_equal "$(cat "$SCRATCH/work/job.out")" "$JOB_USER"
  # The srun job is recorded too, under the same user.
  run grep -c "UserId=$JOB_USER(.*JobState=COMPLETED" "$SCRATCH/state/slurm/jobcomp.log"
  assert_output 2
}

@test "a killed slurmd fails health, naming the node" {
  kill -KILL "$(<"$SCRATCH/run/slurmd.pid")"
  run "$ROLE" health node
  assert_failure
  assert_output "slurm-node@cli0: slurmd is not running"
  # slurmctld notices within its SlurmdTimeout (30 s) and a ping round.
  for _ in $(seq 90); do "$ROLE" health cluster >/dev/null 2>&1 || break; sleep 1; done
  run "$ROLE" health cluster
  assert_failure
  assert_output --regexp '^slurm-controller@cli0: node cli0 is [a-z]+\* in partition slurm_test_1$'
}

@test "stop ends every daemon of the cluster and leaves no process" {
  run "$ROLE" stop node
  assert_success
  run "$ROLE" stop controller
  assert_success
  run pgrep -af -- "$SCRATCH"
  assert_failure
  assert_output ""
  assert_equal "$(stepd_pids "$SCRATCH")" ""
  # Stopping again does nothing and succeeds.
  run "$ROLE" stop controller
  assert_success
}
