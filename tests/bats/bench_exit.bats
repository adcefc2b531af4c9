#!/usr/bin/env bats
# scripts/bench's exit status is the run's verdict, so a CI gate that reads it alone
# never takes a run that judged nothing for a pass: 0 PASS, 1 FAIL, 3 NO VERDICT.
# The kit is the real one except for what needs a lab: `scripts/lab` says the lab
# "local" is up with no nodes (its health check and watchdog find nothing to fail), and `reframe` lists one
# test and "runs" by leaving a recorded run (tests/fixtures/runs) in its run directory.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
load stand_in_kit

setup() {
  stand_in_kit
  cat >"$KIT/.venv/bin/reframe" <<'EOF'
#!/bin/bash
printf '%s\n' "$*" >>"$PFSLAB_ROOT/reframe.args"
[[ ! -s $PFSLAB_RUN_DIR/provenance.json ]] || cp "$PFSLAB_RUN_DIR/provenance.json" "$PFSLAB_ROOT/provenance.as-recorded"
for arg; do
  [[ $arg == -l ]] && { echo "- Fio_fio_rand4k %lab=local %workload=fio-rand4k %threads=1 %mode=quick /0123abcd"; exit 0; }
done
cp -r "$RECORDED"/. "$PFSLAB_RUN_DIR/"
echo "[  PASSED  ] Ran 1/1 test case(s)"
EOF
  chmod +x "$KIT/.venv/bin/reframe"
  echo '{"target": "local", "lab": "local", "nodes": [], "clients": []}' >"$KIT/build/local/inventory.json"
  export PFSLAB_ROOT=$KIT PFSLAB_NO_PRECHECK=1
}

bench_of() {
  RECORDED=$REPO/tests/fixtures/runs/$1 run "$KIT/scripts/bench"
}

@test "a run whose figures passed exits 0" {
  bench_of local-calibrated-demo
  assert_success
  assert_output --partial "verdict: PASS"
}

@test "a run that judged nothing exits 3, with its NO VERDICT table" {
  bench_of local-quick-suite
  assert_failure 3
  assert_output --partial "verdict: NO VERDICT"
  run jq -r .summary.overall "$KIT"/build/runs/local/*/verdict.json
  assert_output "no verdict"
}

@test "a run with a failed figure exits 1" {
  bench_of local-mixed-verdicts
  assert_failure 1
  assert_output --partial "verdict: FAIL"
}

@test "bench --demo and --mode: ReFrame selects the lab's demo cases by their parameters, the run records the mode" {
  RECORDED=$REPO/tests/fixtures/runs/local-calibrated-demo run "$KIT/scripts/bench" --demo --mode full
  assert_success
  run tail -n 1 "$KIT/reframe.args"
  assert_output --partial "-n %lab=local%workload=ior\\-n1%threads=2% "
  assert_output --partial "-n %lab=local%workload=cephfs\\-stria/lammps\\-dump%nodes=2%processes=1% "
  assert_output --partial "--mode full"
  # (the recorded run then replaces provenance.json with its own)
  run jq -r .mode "$KIT/provenance.as-recorded"
  assert_output full
}

@test "a run starts ReFrame once and the kit's CLI once (its health check and watchdog are pfslab bench's own)" {
  bench_of local-calibrated-demo
  assert_success
  run wc -l <"$KIT/reframe.args"
  assert_output 1
  run cat "$KIT/pfslab.calls"
  assert_output "bench --"
}
