#!/usr/bin/env bats
# The site target for real: labs/site-local.yaml on this checkout's local-slurm lab (its
# CephFS and its Slurm), brought up and down by an ordinary user. Its lab-up installs
# and starts nothing: it checks both clients through srun and writes the inventory; a
# client whose mount is missing is refused, naming it; lab-down leaves the scratch
# directory the site gave the user empty, and the file system outside it as it was;
# lab-up and lab-down leave a spare disk of the host (a loop device) as found and write
# no file outside the user's home, the scratch and the checkout (strace); a client's
# slurmd killed during make bench ends the run with FAIL naming that node; the user's
# SSH session dropping during make bench leaves the run going, and make bench reattaches.
# Needs root (to bring up local-slurm and make the user), /dev/fuse, `make deps` and
# `make tools` (IOR and mdtest, the site lab's tools).

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BASE=local-slurm
SITE=site-local
# The ordinary user: made for the test when absent (as tests/bats/slurm_role.bats does).
JOB_USER=pfslabtest

setup_file() {
  [[ $(id -u) -eq 0 ]] || { skip_file "local-slurm needs root"; return 0; }
  [[ -c /dev/fuse ]] || { skip_file "the local lab needs /dev/fuse"; return 0; }
  local tool
  for tool in ior mdtest; do
    [[ -x $REPO/build/tools/view/bin/$tool || -x /opt/pfslab/view/bin/$tool ]] ||
      { skip_file "$tool is not built; run 'make tools' first"; return 0; }
  done
  if [[ -s $REPO/build/active-lab ]]; then
    echo "# a lab is already up in $REPO; this test brings up its own and refuses to share" >&3
    return 1
  fi
  if ! id "$JOB_USER" >/dev/null 2>&1; then
    useradd --no-create-home --shell /bin/sh "$JOB_USER"
    touch "$BATS_FILE_TMPDIR/made-user"
  fi
  "$REPO/scripts/lab" up "$BASE" >&3 2>&1
  local mount
  mount=$(jq -r .filesystem.mount "$REPO/build/$BASE/lab.json")
  # The site's part: data of others on the file system, and a directory it gives the user.
  mkdir -p "$mount/site-data/project"
  head -c 1048576 /dev/urandom >"$mount/site-data/project/results.bin"
  echo "not the kit's" >"$mount/site-data/README"
  mkdir -p "$mount/pfslab-site"
  chown "$JOB_USER:" "$mount/pfslab-site"
  # The user's checkout, as in CI: here root's, so the user may write its build/ (the
  # kit writes nothing of a site lab elsewhere, but the scratch).
  stat -c '%u:%g %a' "$REPO/build" >"$BATS_FILE_TMPDIR/build-owner"
  chown "$JOB_USER" "$REPO/build"
  checksums >"$BATS_FILE_TMPDIR/before"
}

teardown_file() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || return 0
  # What a failed test may have left: the spare loop device, the user's home.
  [[ ! -s $BATS_FILE_TMPDIR/loop ]] || losetup -d "$(cat "$BATS_FILE_TMPDIR/loop")" 2>/dev/null || true
  [[ ! -s $BATS_FILE_TMPDIR/home ]] || rm -rf "$(cat "$BATS_FILE_TMPDIR/home")"
  # A detached run a failed test left going holds the site lab: ended (its processes are
  # in its own session; the test started it with SIGINT ignored, as background jobs are).
  if [[ -s $REPO/build/$SITE/detached/pid ]]; then
    kill -TERM -- "-$(cat "$REPO/build/$SITE/detached/pid")" 2>/dev/null || true
    sleep 10
  fi
  "$REPO/scripts/lab" down "$SITE" >/dev/null 2>&1 || true
  if [[ -s $BATS_FILE_TMPDIR/build-owner ]] && [[ -d $REPO/build ]]; then
    read -r owner mode <"$BATS_FILE_TMPDIR/build-owner"
    chown "$owner" "$REPO/build" && chmod "$mode" "$REPO/build"
  fi
  "$REPO/scripts/lab" down "$BASE" >/dev/null 2>&1 || true
  [[ ! -e $BATS_FILE_TMPDIR/made-user ]] || userdel "$JOB_USER" 2>/dev/null || true
}

setup() { skip_when_file_skipped; }

mount_path() { jq -r .filesystem.mount "$REPO/build/$BASE/lab.json"; }

# Every file of the file system but the scratch directory: path and SHA-256.
checksums() {
  local mount
  mount=$(mount_path)
  (cd "$mount" && find . -path ./pfslab-site -prune -o -print0 | sort -z |
    xargs -0 -I{} sh -c 'if [ -f "$1" ]; then sha256sum "$1"; else echo "dir $1"; fi' _ {})
}

# Slurm as a site's user reaches it: through SLURM_CONF (scripts/roles/README.md).
slurm_conf() {
  local state
  state=$(jq -r .local.state_root "$REPO/build/$BASE/inventory.json")
  echo "$(jq -r .paths.state "$state/nodes/cli0/node.json")/slurm/slurm.conf"
}

as_user() { (cd "$REPO" && runuser -u "$JOB_USER" -- env HOME=/tmp USER="$JOB_USER" SLURM_CONF="$(slurm_conf)" "$@"); }

@test "an ordinary user's make lab-up checks both clients through Slurm and writes the inventory" {
  run as_user make lab-up LAB=$SITE
  assert_success
  assert_output --partial "2 node(s) (cli0, cli1) see $(mount_path)"
  inv=$REPO/build/$SITE/inventory.json
  assert_equal "$(jq -r '.target, (.clients | join(","))' "$inv" | paste -sd' ')" "site cli0,cli1"
  assert_equal "$(jq -r '.site.nodes.cli1.fstype' "$inv")" "fuse.ceph-fuse"
  [[ $(jq -r '.site.nodes.cli1.tools.ior.path' "$inv") == */ior ]]
  [[ $(jq -r '.site.scheduler_version' "$inv") == slurm* ]]
  assert_equal "$(stat -c %U "$inv")" "$JOB_USER"
  assert_equal "$(stat -c %U "$(mount_path)/pfslab-site/.pfslab-scratch")" "$JOB_USER"
  assert_equal "$(cat "$REPO/build/active-lab")" "$SITE"
  # The checks ran as jobs of that user (Slurm's job-completion log: UserId=name(uid)),
  # written by slurmctld shortly after the job ends.
  state=$(jq -r .local.state_root "$REPO/build/$BASE/inventory.json")
  log=$(jq -r .paths.state "$state/nodes/cli0/node.json")/slurm/jobcomp.log
  for n in $(seq 60); do
    grep -q " Name=pfslab-site-check " "$log" 2>/dev/null && break
    sleep 0.5
  done
  run grep " Name=pfslab-site-check " "$log"
  assert_output --partial "UserId=$JOB_USER("
  assert_equal "$(checksums)" "$(cat "$BATS_FILE_TMPDIR/before")"
}

@test "an ordinary user's make bench runs the suite as Slurm jobs of that user, ends in a verdict; make report draws it" {
  run as_user make bench
  echo "$output" | grep -E '^verdict:|^slurm-accounting' | sed 's/^/# /' >&3
  assert_success
  assert_output --regexp "verdict: PASS "
  run_dir=$(find "$REPO/build/runs/$SITE" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1)
  assert_equal "$(stat -c %U "$run_dir/report.json")" "$JOB_USER"
  # Figures were measured and judged against the lab's (contract) references.
  run jq -r '[.rows[] | select(.verdict == "pass" and .measured != null)] | length' "$run_dir/verdict.json"
  refute_output "0"
  # One batch job per test, each in Slurm's records under the user.
  tests=$(jq '[.runs[].testcases[]] | length' "$run_dir/report.json")
  assert_equal "$(grep -c "UserId=$JOB_USER(" "$run_dir/slurm-accounting.txt")" "$tests"
  assert_equal "$(jq ".slurm_accounting.jobs | length" "$run_dir/provenance.json")" "$tests"
  # Submitted with sbatch, started inside the allocation, never as root.
  run grep -rh '^#SBATCH --partition=local_slurm' "$run_dir/output"
  assert_equal "${#lines[@]}" "$tests"
  run grep -rlE 'OMPI_ALLOW_RUN_AS_ROOT|allow-run-as-root' "$run_dir"
  assert_output ""
  run as_user make report RUN="$SITE/$(basename "$run_dir")"
  assert_success
  assert [ -s "$run_dir/report/report.html" ]
  assert_equal "$(checksums)" "$(cat "$BATS_FILE_TMPDIR/before")"
}

# The user's make bench as in the terminal of an SSH login to the submit node: in a
# session of its own, whose SIGHUP is that login dropping.
follower_session() {
  export -f as_user slurm_conf
  export REPO JOB_USER BASE
  setsid bash -c 'as_user make bench REFRAME_ARGS=--demo' >"$1" 2>&1 &
  FOLLOWER=$!
}

@test "the user's SSH session dropping mid-run leaves make bench's run going; the user's make bench reattaches and it ends in a verdict" {
  local conf n run_dir size pid before tests
  conf=$(slurm_conf)
  run as_user make lab-up LAB=$SITE
  assert_success
  before=$(find "$REPO/build/runs/$SITE" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
  follower_session "$BATS_TEST_TMPDIR/first.out"
  # Mid-run: once a job of the user is running.
  for n in $(seq 240); do
    [[ -n $(SLURM_CONF=$conf squeue -h -u "$JOB_USER" -t RUNNING -o %i 2>/dev/null) ]] && break
    sleep 0.5
  done
  run_dir=$REPO/build/runs/$SITE/$(cat "$REPO/build/$SITE/detached/run")
  size=$(stat -c %s "$run_dir/console.log")
  kill -HUP -- "-$FOLLOWER"
  wait "$FOLLOWER" || true
  run cat "$BATS_TEST_TMPDIR/first.out"
  assert_output --partial "SIGHUP: no longer following run $(basename "$run_dir"); the run goes on"
  refute_output --partial "verdict:"
  # The run goes on: its process, and the lab is its (lab-down refused).
  pid=$(cat "$REPO/build/$SITE/detached/pid")
  assert [ -e "/proc/$pid" ]
  assert [ ! -e "$run_dir/status" ]
  run as_user make lab-down LAB=$SITE
  assert_failure
  assert_output --partial "lab $SITE is busy: its bench"
  run as_user make bench
  echo "$output" | grep -E '^\[bench\] a run is going|^verdict:' | sed 's/^/# /' >&3
  assert_success
  assert_output --partial "a run is going here since "
  assert_output --partial "reattaching (run $(basename "$run_dir")"
  assert_output --partial "verdict: PASS"
  # It printed after the session dropped, and ended on its own with its status.
  (($(stat -c %s "$run_dir/console.log") > size))
  assert_equal "$(cat "$run_dir/status")" 0
  assert [ ! -e "$REPO/build/$SITE/detached" ]
  # One run directory holds it all: the report, every test's job script and output.
  assert_equal "$(find "$REPO/build/runs/$SITE" -mindepth 1 -maxdepth 1 -type d | wc -l)" $((before + 1))
  tests=$(jq '[.runs[].testcases[]] | length' "$run_dir/report.json")
  assert_equal "$tests" 2
  run grep -rlE '^#SBATCH --partition=local_slurm' "$run_dir/output"
  assert_equal "${#lines[@]}" "$tests"
  assert [ -s "$run_dir/verdict.json" ]
  # Nothing of the user's is left running once the run ended.
  for n in $(seq 10); do [[ -z $(pgrep -u "$JOB_USER") ]] && break; sleep 0.5; done
  run pgrep -a -u "$JOB_USER"
  assert_output ""
}

@test "make lab-down removes the kit's files only and gives the active mark back to local-slurm" {
  runuser -u "$JOB_USER" -- mkdir -p "$(mount_path)/pfslab-site/ior-n1/run"
  runuser -u "$JOB_USER" -- sh -c "head -c 65536 /dev/zero >'$(mount_path)/pfslab-site/ior-n1/run/file'"
  run as_user make lab-down LAB=$SITE
  assert_success
  assert_output --partial "emptied (it was there before the kit)"
  assert [ -d "$(mount_path)/pfslab-site" ]
  assert_equal "$(find "$(mount_path)/pfslab-site" -mindepth 1 | wc -l)" 0
  assert [ ! -e "$REPO/build/$SITE" ]
  assert_equal "$(cat "$REPO/build/active-lab")" "$BASE"
  assert_equal "$(checksums)" "$(cat "$BATS_FILE_TMPDIR/before")"
}

# lab-up or lab-down as the user under strace (every process it starts followed;
# -y: descriptors with their paths). The jobs lab-up submits run under slurmd, not
# under strace: they are the probe (targets/site/checks.py probe_script), which writes one
# probe file in the scratch and removes it.
traced() {
  local action=$1 home=$2 trace=$3
  (cd "$REPO" && strace -f -qq -y -e trace=%file,%process -u "$JOB_USER" -o "$trace" \
    env HOME="$home" USER="$JOB_USER" LOGNAME="$JOB_USER" SLURM_CONF="$(slurm_conf)" make "lab-$action" LAB=$SITE)
}

@test "lab-up and lab-down leave a spare disk as found (checksums) and write nothing outside the user's home, the scratch and the checkout (strace)" {
  local img dev before home action
  # A spare disk of the host: a file system over random data, on a loop device.
  img=$BATS_FILE_TMPDIR/spare.img
  head -c $((64 << 20)) /dev/urandom >"$img"
  mkfs.ext4 -q -F -L pfslab-spare "$img"
  dev=$(losetup --find --show "$img")
  echo "$dev" >"$BATS_FILE_TMPDIR/loop"
  before=$(sha256sum <"$dev")
  home=$(mktemp -d /tmp/pfslab-home.XXXXXX)
  echo "$home" >"$BATS_FILE_TMPDIR/home"
  chown "$JOB_USER" "$home"
  for action in up down; do
    run traced "$action" "$home" "$BATS_TEST_TMPDIR/$action.trace"
    assert_success
  done
  assert_equal "$(sha256sum <"$dev")" "$before"
  losetup -d "$dev"
  rm "$BATS_FILE_TMPDIR/loop"
  echo "# spare disk $dev (64 MiB, ext4 over random data): sha256 ${before%% *} before and after" >&3
  # Allowed: the home, the scratch, the checkout, /dev/null; files in /tmp only if
  # gone when the command ended (mktemp's, e.g. scripts/lab's resolved lab); a traced
  # process's own /proc entries. Failed attempts elsewhere wrote nothing: listed only.
  for action in up down; do
    run "$REPO/.venv/bin/python" "$REPO/tests/lib/strace_writes.py" "$BATS_TEST_TMPDIR/$action.trace" --cwd "$REPO" \
      --allow "$home" --allow "$(mount_path)/pfslab-site" --allow "$REPO" --allow /dev/null \
      --temporary /tmp --own-proc --attempts
    echo "# lab-$action: $(grep -c '' "$BATS_TEST_TMPDIR/$action.trace") trace lines; outside the allowed places: $(grep -cv '^failed ' <<<"$output" || true) write(s), $(grep -c '^failed ' <<<"$output" || true) failed attempt(s)" >&3
    grep '^failed ' <<<"$output" | sort | uniq -c | head -n 10 | sed "s/^/#   lab-$action attempt: /" >&3 || true
    assert_success
  done
  # The trace saw the writes the kit is known to make (so it traced the right commands).
  run "$REPO/.venv/bin/python" "$REPO/tests/lib/strace_writes.py" "$BATS_TEST_TMPDIR/up.trace" --cwd "$REPO"
  assert_output --partial "$(mount_path)/pfslab-site/.pfslab-scratch"
  assert_output --partial "$REPO/build/$SITE/inventory.json"
  rm -rf "$home"
  assert [ ! -e "$REPO/build/$SITE" ]
  assert_equal "$(cat "$REPO/build/active-lab")" "$BASE"
}

@test "a client's slurmd killed during make bench: the run ends with FAIL naming the node, no benchmark process is left" {
  local state pidfile conf bench killed took n status_bench
  state=$(jq -r .local.state_root "$REPO/build/$BASE/inventory.json")
  pidfile=$(jq -r .paths.run "$state/nodes/cli1/node.json")/slurmd.pid
  conf=$(slurm_conf)
  run as_user make lab-up LAB=$SITE
  assert_success
  as_user make bench >"$BATS_TEST_TMPDIR/bench.out" 2>&1 &
  bench=$!
  # During the run: once a job of the user is running.
  for n in $(seq 240); do
    [[ -n $(SLURM_CONF=$conf squeue -h -u "$JOB_USER" -t RUNNING -o %i 2>/dev/null) ]] && break
    sleep 0.5
  done
  kill -KILL "$(cat "$pidfile")"
  killed=$SECONDS
  wait "$bench" && status_bench=0 || status_bench=$?
  took=$((SECONDS - killed))
  grep -E 'watchdog|verdict:' "$BATS_TEST_TMPDIR/bench.out" | sed 's/^/# /' >&3
  echo "# make bench ended ${took} s after slurmd of cli1 was killed" >&3
  # make's own status is 2; its Error line has the bench's: 1, a FAIL verdict.
  assert_equal "$status_bench" 2
  run cat "$BATS_TEST_TMPDIR/bench.out"
  assert_output --regexp "bench\] Error 1"
  assert_output --regexp "verdict: FAIL .*lab unhealthy during the run: node cli1: not responding to the Slurm controller"
  refute_output --partial "node cli0:"
  assert [ "$took" -le 180 ]
  run jq -r .state "$(find "$REPO/build/runs/$SITE" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1)/lab-health.json"
  assert_output unhealthy
  # No process of the user is left, on any node (all are namespaces of this host), nor
  # any job of the run in Slurm's queue. (A grace of 5 s: make bench's own output
  # pipes, e.g. the tee of watchdog.log, end just after it.)
  for n in $(seq 10); do [[ -z $(pgrep -u "$JOB_USER") ]] && break; sleep 0.5; done
  run pgrep -a -u "$JOB_USER"
  assert_output ""
  run env SLURM_CONF="$conf" squeue -h -u "$JOB_USER"
  assert_output ""
  # Repair: the site lab down, then local-slurm's lab-up restarts the slurmd; the
  # controller takes cli1 back (ReturnToService=2) once it registers.
  run as_user make lab-down LAB=$SITE
  assert_success
  run "$REPO/scripts/lab" up "$BASE"
  assert_success
  for n in $(seq 120); do
    [[ $(SLURM_CONF=$conf sinfo -h -n cli1 -o %T 2>/dev/null) == idle ]] && break
    sleep 0.5
  done
  assert_equal "$(SLURM_CONF=$conf sinfo -h -n cli1 -o %T)" idle
}

@test "a client that does not see the mount is refused at lab-up, by name, and nothing is written" {
  local state node_json pidfile conf netns mount n
  state=$(jq -r .local.state_root "$REPO/build/$BASE/inventory.json")
  node_json=$state/nodes/cli1/node.json
  pidfile=$(jq -r .paths.run "$node_json")/slurmd.pid
  conf=$(jq -r .paths.state "$node_json")/slurm/slurm.conf
  netns=$(jq -r .instance.nodes.cli1.netns "$REPO/build/$BASE/lab.json")
  mount=$(mount_path)
  # cli1's slurmd again, in a mount namespace of its own without the file system: its
  # jobs see an empty directory where the mount was, as on a node whose mount failed.
  kill "$(cat "$pidfile")"
  for n in $(seq 50); do [[ -e /proc/$(cat "$pidfile" 2>/dev/null || echo 0) ]] || break; sleep 0.2; done
  nsenter --net="/run/netns/$netns" unshare --mount --propagation private -- \
    sh -c 'umount -l "$0" && exec slurmd -f "$1" -N cli1' "$mount" "$conf"
  for n in $(seq 60); do
    [[ $(SLURM_CONF=$conf sinfo -h -n cli1 -o %T 2>/dev/null) == idle ]] && break
    sleep 0.5
  done
  run as_user make lab-up LAB=$SITE
  kill "$(cat "$pidfile")" || true
  assert_failure
  assert_output --partial "[lab] error: lab $SITE refused: node cli1: mount $mount is missing: not a mount point"
  refute_output --partial "node cli0:"
  assert [ ! -e "$REPO/build/$SITE" ]
  assert [ ! -e "$mount/pfslab-site/.pfslab-scratch" ]
  assert_equal "$(cat "$REPO/build/active-lab")" "$BASE"
  # local-slurm repairs its slurmd (lab-up restarts what is not running).
  for n in $(seq 50); do [[ -e /proc/$(cat "$pidfile" 2>/dev/null || echo 0) ]] || break; sleep 0.2; done
  run "$REPO/scripts/lab" up "$BASE"
  assert_success
}
