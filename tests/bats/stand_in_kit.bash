# shellcheck shell=bash
# shellcheck disable=SC2016 # the stand-ins' own $1, $3 are written for them to expand
# A kit for scripts/bench without a lab (bench_exit.bats, bench_detach.bats): this
# checkout's files linked into $KIT, a `scripts/lab` that says lab "local" is active,
# and this checkout's pfslab, whose starts it records ($KIT/pfslab.calls). The caller
# writes $KIT/.venv/bin/reframe and the lab's inventory (a lab of no nodes: its health
# check and its watchdog, pfslab bench's own, find nothing to fail).
stand_in_kit() {
  local entry
  KIT=$BATS_TEST_TMPDIR/kit
  mkdir -p "$KIT/scripts" "$KIT/.venv/bin" "$KIT/build/local"
  for entry in labs families pfslab registry reframe spack targets terraform; do ln -s "$REPO/$entry" "$KIT/$entry"; done
  for entry in "$REPO"/scripts/*; do ln -s "$entry" "$KIT/scripts/"; done
  rm "$KIT/scripts/lab"
  printf '#!/bin/bash\ncase $1 in active) echo local ;; *) exit 2 ;; esac\n' >"$KIT/scripts/lab"
  chmod +x "$KIT/scripts/lab"
  # This checkout's pfslab, each start of it recorded in $KIT/pfslab.calls.
  printf '#!/bin/bash\nprintf "%%s\\n" "$*" >>"%s/pfslab.calls"\nexec "%s" "$@"\n' "$KIT" "$REPO/.venv/bin/pfslab" >"$KIT/.venv/bin/pfslab"
  chmod +x "$KIT/.venv/bin/pfslab"
  echo local >"$KIT/build/active-lab"
}
