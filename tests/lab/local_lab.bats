#!/usr/bin/env bats
# The embedded local lab for real: up, idempotent, repaired, benchmarked, down.
# `make test-lab` (and .ci/run) runs it; it needs root, /dev/fuse and `make deps`.
# The tests run in order and share one lab; teardown_file always takes it down.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
LAB=local

setup_file() {
  [[ $(id -u) -eq 0 ]] || skip "the local lab needs root"
  [[ -c /dev/fuse ]] || skip "the local lab needs /dev/fuse"
  if [[ -s $REPO/build/active-lab ]]; then
    echo "# a lab is already up in $REPO; this test brings up its own and refuses to share" >&3
    return 1
  fi
}

teardown_file() {
  "$REPO/scripts/lab" down "$LAB" >/dev/null 2>&1 || true
}

elapsed_of() {
  local start=$SECONDS
  "$@"
  echo "elapsed $((SECONDS - start))"
}

@test "lab-up reaches HEALTH_OK with both clients mounted in at most 60 s" {
  run elapsed_of "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "lab $LAB is up and healthy"
  elapsed=$(grep -o 'elapsed [0-9]*' <<<"$output" | cut -d' ' -f2)
  echo "# lab-up took ${elapsed} s" >&3
  assert [ "$elapsed" -le 60 ]
  run "$REPO/scripts/lab" status "$LAB"
  assert_success
  assert_output --partial "ceph: HEALTH_OK"
  assert_equal "$(findmnt -rn -t fuse.ceph-fuse | grep -c "$REPO/build/$LAB/lab/nodes/cli")" 2
}

@test "a second lab-up changes nothing and keeps the lab healthy" {
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "terraform: Apply complete! Resources: 0 added, 0 changed, 0 destroyed."
  assert_output --partial "nothing to repair"
  refute_output --partial "repairing"
  run "$REPO/scripts/lab" status "$LAB"
  assert_success
}

@test "after an OSD daemon is killed, lab-up repairs the lab" {
  pidfile=/run/pfslab/$LAB/osd1/ceph-osd.1.pid
  assert [ -s "$pidfile" ]
  kill "$(cat "$pidfile")"
  sleep 2
  run "$REPO/scripts/lab" status "$LAB"
  assert_failure
  assert_output --partial "ceph-osd.1: not running"
  run "$REPO/scripts/lab" up "$LAB"
  assert_success
  assert_output --partial "repairing ceph-osd on osd1"
  assert_output --partial "HEALTH_OK"
}

@test "the quick suite runs: every test passes its checks or is skipped with its reason" {
  PFSLAB_MODE=quick run "$REPO/scripts/bench"
  echo "$output" | sed 's/^/# /' >&3
  run_dir=$(find "$REPO/build/runs/$LAB" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1)
  assert [ -s "$run_dir/report.json" ]
  assert [ -s "$run_dir/provenance.json" ]
  assert [ -s "$run_dir/lab.yaml" ]
  # Benchmarks that ran produced figures; none failed its exit status or output checks.
  run jq -r '.rows[] | select(.verdict == "fail" and .figure == "-") | "\(.test) \(.threads): \(.reason)"' "$run_dir/verdict.json"
  assert_output ""
  run jq -r '[.rows[] | select(.figure != "-")] | length' "$run_dir/verdict.json"
  refute_output "0"
  # A missing tool is a skip with its reason, never a pass; so is a seed's workload
  # that needs another file system (BeeGFS striping on this CephFS lab).
  run jq -r '.rows[] | select(.verdict == "skip") | .reason' "$run_dir/verdict.json"
  for reason in "${lines[@]}"; do
    assert_regex "$reason" "is not installed|lab .* is not up|runs on [a-z, ]+ only; lab $LAB is "
  done
}

# A subset that runs in about half a minute: the baseline, the passing run and the
# throttled run all measure these same figures.
SUBSET=(-n 'IOzone%case=local/iozone-seq/2' -n 'Fio%case=local/fio-rand4k/2')

newest_run() { find "$REPO/build/runs/$LAB" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1; }

@test "make baseline REPEAT=3 writes references that the next run passes" {
  refs=$BATS_FILE_TMPDIR/references
  mkdir -p "$refs"
  PFSLAB_REFERENCES_DIR=$refs REPEAT=3 run "$REPO/scripts/baseline" "${SUBSET[@]}"
  assert_success
  assert_output --regexp "local.yaml: [0-9]+ baseline references from 3 runs"
  run grep -c "kind: baseline" "$refs/local.yaml"
  assert_output "4"  # IOzone write and read, fio write and read IOPS, at 2 threads
  PFSLAB_REFERENCES_DIR=$refs run "$REPO/scripts/bench" "${SUBSET[@]}"
  echo "$output" | sed 's/^/# /' >&3
  assert_success
  assert_output --partial "verdict: PASS  (4 pass, 0 fail, 0 skipped, 0 without reference)"
}

@test "with the OSD daemons starved of CPU, the same run fails the affected figures" {
  refs=$BATS_FILE_TMPDIR/references
  [[ -s $refs/local.yaml ]] || skip "needs the baseline of the previous test"
  run "$REPO/scripts/throttle" on 10
  assert_success
  PFSLAB_REFERENCES_DIR=$refs run "$REPO/scripts/bench" "${SUBSET[@]}"
  status_bench=$status
  "$REPO/scripts/throttle" off
  echo "$output" | sed 's/^/# /' >&3
  assert_equal "$status_bench" 1
  run jq -r '.rows[] | select(.verdict == "fail") | .figure' "$(newest_run)/verdict.json"
  assert_line read
  assert_line write
  assert_line write_iops
}

@test "lab-down takes at most 30 s and leaves nothing behind" {
  run elapsed_of "$REPO/scripts/lab" down "$LAB"
  assert_success
  assert_output --partial "nothing is left"
  elapsed=$(grep -o 'elapsed [0-9]*' <<<"$output" | cut -d' ' -f2)
  echo "# lab-down took ${elapsed} s" >&3
  assert [ "$elapsed" -le 30 ]
  assert_equal "$(ip netns list | grep -c '^pfs-')" 0
  run ip link show pfslab0
  assert_failure
  assert_equal "$(findmnt -rn | grep -c -e "$REPO/build/$LAB" -e /mnt/pfslab)" 0
  assert_equal "$(pgrep -c -f "$REPO/build/$LAB/" || true)" 0
  assert [ ! -e "$REPO/build/$LAB" ]
  assert [ ! -e "/run/pfslab/$LAB" ]
  assert [ ! -e /mnt/pfslab ]
}
