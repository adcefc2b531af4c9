# shellcheck shell=bash
# The cluster's files (paths.cluster) and which node gets which: the bootstrap node
# (the first node of the first start phase) makes them; every other node receives only
# the files its roles use, so a secret lives on no node that does not need it. Which
# files a role uses is its family's to say (roles[].cluster_files in
# families/<fs>/family.json); the Slurm scheduler's roles use MUNGE's key.
# Shared by scripts/lib/remote.sh (cloud, bare metal: copied over SSH) and
# scripts/local/cluster-files (the local lab: one directory per node). Sourced after
# common.sh; defines functions only.
#
# The families' files today:
#   ceph.conf                              every Ceph node (not secret, mode 644)
#   monmap                                 ceph-mon (not secret; only a new monitor reads it)
#   ceph.mon.keyring                       ceph-mon: the mon. key and every key created
#                                          at bootstrap, which a new monitor's store needs
#   ceph.client.admin.keyring              ceph-mon (quorum, `health cluster`/`service`),
#                                          ceph-mds (the first MDS creates the pools and
#                                          file system; `health mds` reads the MDS map)
#   ceph.client.bootstrap-mgr.keyring      ceph-mgr: may only create mgr.* keys
#   ceph.client.bootstrap-osd.keyring      ceph-osd: may only register OSDs (`osd new`)
#   ceph.client.pfslab.keyring             ceph-client: the file system, nothing else
#   beegfs.auth                            every BeeGFS node: connAuthFile's shared secret
#   munge.key                              every Slurm node: MUNGE's key (the slurm role's)
#
# Secrets are mode 600 (beegfs.auth 400), owned by root (munge.key 400, owned by munge:
# its daemon reads a copy), in a directory of mode 700.

# The files a node with these roles gets, one per line: cluster_files_for ROLE...
# (pfslab/registry.py's cluster_files_for, which a remote lab's copy uses too).
cluster_files_for() {
  local out
  out=$(pfslab registry cluster-files "$@") || die "cannot tell which cluster files roles $* use"
  [[ -z $out ]] || printf '%s\n' "$out"
}

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

# Copy, between two directories of this machine, the files a node with these roles
# gets (those the source has: a file system's other files are not there). Each file
# keeps its mode; one that is already identical is left alone. Prints nothing.
# Usage: cluster_files_copy SOURCE DEST ROLE...
cluster_files_copy() {
  local src=$1 dst=$2 file tmp
  shift 2
  [[ $src -ef $dst ]] && return 0
  mkdir -p "$dst"
  chmod 700 "$dst"
  while read -r file; do
    [[ -n $file && -e $src/$file ]] || continue
    cmp -s "$src/$file" "$dst/$file" && continue
    tmp=$(mktemp "$dst/.$file.XXXXXX")
    cp -p "$src/$file" "$tmp"
    mv "$tmp" "$dst/$file"
  done < <(cluster_files_for "$@")
}
