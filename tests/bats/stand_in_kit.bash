# shellcheck shell=bash
# shellcheck disable=SC2016 # the stand-ins' own $1, $3 are written for them to expand
# A kit for scripts/bench without a lab (bench_exit.bats, bench_detach.bats): this
# checkout's files linked into $KIT, a `scripts/lab` that says lab "local" is up and
# healthy, a watchdog that ends on TERM and otherwise loops while WATCH_CONDITION holds
# (a shell test on its arguments: LAB RUN_DIR BENCH_PID INTERVAL), and this checkout's
# pfslab, whose starts it records ($KIT/pfslab.calls). The caller writes $KIT/.venv/bin/reframe and the lab's inventory.
stand_in_kit() {
  local watch_condition=$1 entry
  KIT=$BATS_TEST_TMPDIR/kit
  mkdir -p "$KIT/scripts" "$KIT/.venv/bin" "$KIT/build/local"
  for entry in labs families pfslab registry reframe spack targets terraform; do ln -s "$REPO/$entry" "$KIT/$entry"; done
  for entry in "$REPO"/scripts/*; do ln -s "$entry" "$KIT/scripts/"; done
  rm "$KIT/scripts/lab" "$KIT/scripts/watchdog"
  printf '#!/bin/bash\ncase $1 in active) echo local ;; status) exit 0 ;; *) exit 2 ;; esac\n' >"$KIT/scripts/lab"
  printf '#!/bin/bash\ntrap "exit 0" TERM\nwhile %s; do sleep 0.1; done\n' "$watch_condition" >"$KIT/scripts/watchdog"
  chmod +x "$KIT/scripts/lab" "$KIT/scripts/watchdog"
  # This checkout's pfslab, each start of it recorded in $KIT/pfslab.calls.
  printf '#!/bin/bash\nprintf "%%s\\n" "$*" >>"%s/pfslab.calls"\nexec "%s" "$@"\n' "$KIT" "$REPO/.venv/bin/pfslab" >"$KIT/.venv/bin/pfslab"
  chmod +x "$KIT/.venv/bin/pfslab"
  echo local >"$KIT/build/active-lab"
}
