# shellcheck shell=bash
# Target adapter: a site lab (targets/site/target.json): storage, nodes and scheduler
# that are already there. Nothing is provisioned or installed and nothing runs as root:
# scripts/lab calls target_up, target_down and target_status (provisions false), and
# the checks themselves are targets/site/checks.py's, `pfslab site ...` (target.json's
# python; run through the lab's scheduler).

target_credentials() { :; }

# Usage: target_up LAB STATE_DIR    the checks; then the kit's scratch and the inventory
target_up() {
  local out
  out=$(pfslab site up "$PFSLAB_LAB_JSON" "$2" 2>&1) || {
    printf '%s\n' "${out#pfslab site: }" | sed 's/^/[lab] error: /' >&2
    return 2
  }
  printf '%s\n' "$out" | sed 's/^/[lab] /' >&2
}

# Usage: target_down LAB    the kit's files in the scratch directory, nothing else
target_down() {
  pfslab site down "$PFSLAB_LAB_JSON" | sed 's/^/[lab] /' >&2
  return "${PIPESTATUS[0]}"
}

# Usage: target_status LAB STATE_DIR    the same checks again, read-only
target_status() {
  pfslab site check "$2/lab.json"
}

target_leftovers() { :; }
target_gone() { echo "only the kit's scratch directory was removed"; }
