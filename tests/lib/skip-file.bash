# shellcheck shell=bash
# Bats 1.8 (Debian 12's) cannot skip from setup_file: it reports "setup_file failed".
# A file whose precondition is missing calls `skip_file REASON` in setup_file and
# returns; every test's setup() then calls `skip_when_file_skipped`, so each test is
# skipped with that reason printed, never passed and never failed.
skip_file() {
  export PFSLAB_SKIP_FILE=$1
}

skip_when_file_skipped() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || skip "$PFSLAB_SKIP_FILE"
}
