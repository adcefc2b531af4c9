# shellcheck shell=bash
# MUNGE's key, on the node that makes the cluster's files (the bootstrap node: the
# slurm role, and a remote lab's copy through pfslab/lifecycle/cluster_copy.py). Which
# node gets which of the cluster's files, and the local lab's copy: see
# pfslab/transport/local_node.py. Sourced after common.sh; defines functions only.

# MUNGE's key for a lab with Slurm, made once: 1 KiB of /dev/urandom written inside
# the file (never an argument, never printed), mode 400, owned by munge where that user
# exists (munged reads a copy of its own). Linked into place, not moved: when two makers
# race, the first key stays and every node gets that one.
# Usage: munge_key_make PATH
munge_key_make() {
  local key=$1 tmp
  [[ -s $key ]] && return 0
  tmp=$(mktemp "$(dirname "$key")/.munge.key.XXXXXX")
  head -c 1024 /dev/urandom >"$tmp"
  chmod 400 "$tmp"
  if id munge >/dev/null 2>&1; then chown munge: "$tmp"; fi
  ln "$tmp" "$key" 2>/dev/null || [[ -s $key ]] || { rm -f "$tmp"; die "cannot make the munge key $key"; }
  rm -f "$tmp"
}
