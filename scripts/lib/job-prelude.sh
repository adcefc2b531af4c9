# shellcheck shell=bash
# The top of every ReFrame job script of the kit (reframe/pfslab/rfm.py, JOB_PRELUDE).
# The measured tool is the job's executable, started by the partition's launcher; its
# output is the job's stdout. Steps before it (a write phase before a read phase,
# iterations, IOzone's retried cluster mode) run through pfslab_step: each step's output
# goes to its own file (kept with the run), its status is printed, and a failure stops
# the job before the executable with the failed step's status. pfslab_done prints the
# executable's status the same way. The kit's messages and the earlier steps' outputs go
# to stderr, so that stdout holds the executable's output alone.
#
# Not sourced: rfm.py copies the lines below this header of leading comment lines
# into each job script as they are, so a change to them changes every job script.
# The job scripts are bash; these lines keep to POSIX sh.
pfslab_status=0
pfslab_step() {
  pfslab_n=$1 pfslab_out=$2; shift 2
  if [ "$pfslab_status" -ne 0 ]; then echo "pfslab: step $pfslab_n skipped after a failure" >&2; return; fi
  echo "pfslab: step $pfslab_n: $*" >&2
  pfslab_try=1
  while :; do
    eval "$*" >"$pfslab_out" 2>&1; pfslab_rc=$?
    # A tool that failed to start (pfslab_transient: its own message for that) is tried
    # again, twice at most; each failed try's output is kept beside the step's.
    if [ "$pfslab_rc" -ne 0 ] && [ "$pfslab_try" -lt 3 ] && [ -n "${pfslab_transient:-}" ] &&
      grep -Eq "$pfslab_transient" "$pfslab_out"; then
      mv "$pfslab_out" "$pfslab_out.try$pfslab_try"
      echo "pfslab: step $pfslab_n try $pfslab_try did not start (exit $pfslab_rc: $(grep -Em1 "$pfslab_transient" "$pfslab_out.try$pfslab_try")); output kept in $pfslab_out.try$pfslab_try; trying again" >&2
      pfslab_try=$((pfslab_try + 1))
      sleep 2
      continue
    fi
    break
  done
  cat "$pfslab_out" >&2
  pfslab_done "$pfslab_n" "$pfslab_rc"
}
pfslab_done() {
  echo "pfslab: step $1 exit status $2" >&2
  [ "$2" -eq 0 ] || pfslab_status=$2
}
