# shellcheck shell=bash
# Run a command and say how long it took on bats' fd 3 (the closing notes quote these
# lines): timed WHAT COMMAND... keeps COMMAND's exit status.
timed() {
  local what=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "# timing: $what $((SECONDS - start)) s (exit $rc)" >&3
  return "$rc"
}
