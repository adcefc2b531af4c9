# shellcheck shell=bash
# Spack helpers shared by scripts/toolchain (make toolchain) and scripts/mirror (make mirror).
# Sourced after common.sh; defines functions and the paths below only.
#
# The kit keeps everything Spack needs under PFSLAB_PREFIX (default /opt/pfslab):
#   spack/                    Spack at the pinned release, when SPACK_ROOT is not set
#   spack-packages/<commit>/  Spack's builtin package repository at the pinned commit
#   spack-config/             the kit's Spack config scope (SPACK_USER_CONFIG_PATH):
#                             repos.yaml, mirrors.yaml, bootstrap.yaml, packages.yaml
#   spack-cache/              Spack's user cache (SPACK_USER_CACHE_PATH): bootstrap store
#   store/, view/, view-seed/ the install tree and the views (fixed in spack/spack.yaml)
# ~/.spack is never read, so a node's result does not depend on who ran the step.

PFSLAB_PREFIX=${PFSLAB_PREFIX:-/opt/pfslab}
PFSLAB_SPACK_ENV=${PFSLAB_SPACK_ENV:-$PFSLAB_ROOT/spack}
SPACK_RELEASE_FILE=$PFSLAB_ROOT/spack/release.conf
KIT_SCOPE=$PFSLAB_PREFIX/spack-config
SPACK=

# A pin from spack/release.conf: release_pin SPACK_RELEASE
release_pin() {
  local key=$1 value
  value=$(sed -n "s/^$key=//p" "$SPACK_RELEASE_FILE" | tail -n 1)
  [[ -n $value ]] || die "spack/release.conf does not set $key"
  printf '%s\n' "$value"
}

# True when version $1 >= version $2 (dotted numbers; a leading v is ignored).
version_ge() {
  local have=${1#v} want=${2#v}
  [[ $(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1) == "$want" ]]
}

# The toolchain profile's config scope (write_profile_scope), when there is one.
PROFILE_ARGS=()

# Run Spack with its output on stderr: stdout stays data for callers.
spk() { "$SPACK" "${PROFILE_ARGS[@]}" "$@" >&2; }

# ---- toolchain profiles ------------------------------------------------------------------
# spack.yaml is the toolchain of x86_64 clients of any file system (the committed
# spack.lock). Two things differ between labs' clients and cannot be one lock: the
# machine (an aarch64 client runs other binaries) and what a file system's family adds
# (BeeGFS: IOR +beegfs, compiled against the BeeGFS client headers, which only BeeGFS
# clients have). A family says what it adds in its family.json (toolchain: Spack
# requirements, and system packages taken as externals, whose versions are the node's).
# A profile states them in a config scope that Spack reads with -C, above the
# environment's own settings; the default profile has none.

# The Spack target of a machine (uname -m); empty for spack.yaml's own (x86_64_v2).
profile_target() {
  case $1 in
    x86_64) echo "" ;;
    aarch64) echo aarch64 ;;
    *) die "toolchain: machine '$1' (uname -m) is not one the kit builds for (x86_64, aarch64)" ;;
  esac
}

# The installed version of each system package FILESYSTEM's family takes as a Spack
# external (toolchain.externals), one per line in the family file's order, e.g. 7.4.5;
# one line naming the package when it is not installed. Usage: toolchain_external_versions FS
toolchain_external_versions() {
  local fs=$1 file family spack deb rpm path v
  file=$(family_file "$fs")
  family=$(jq -r .family "$file")
  while IFS=$'\t' read -r spack deb rpm path; do
    v=
    if command -v dpkg-query >/dev/null 2>&1; then
      v=$(dpkg-query -W -f '${Version}' "$deb" 2>/dev/null || true)
    elif command -v rpm >/dev/null 2>&1; then
      v=$(rpm -q --qf '%{VERSION}' "$rpm" 2>/dev/null || true)
    fi
    v=${v#*:}
    v=${v%%-*}
    [[ $v =~ ^[0-9]+(\.[0-9]+)+$ && -f ${PFSLAB_SYSROOT:-}$path ]] ||
      die "toolchain: the $fs toolchain profile takes $spack from the system ($path), and $deb (deb) / $rpm (rpm) is not installed; 'scripts/roles/$family install client' installs it"
    printf '%s\n' "$v"
  done < <(jq -r '.toolchain.externals[]? | [.spack, .deb, .rpm, .file] | @tsv' "$file")
}

# spack.yaml's packages section for another target: every requirement list replaced
# (require::) by the same list with spack.yaml's target swapped for $1. Spack gives a
# package with requirements of its own none of `all`'s, so each list carries the
# target, and only replacing the lists replaces it.
retargeted_packages() {
  awk '/^  packages:$/ {on = 1; next} on && /^  [^ #]/ {on = 0} on' "$PFSLAB_SPACK_ENV/spack.yaml" |
    sed -e '/^ *#/d' -e '/^$/d' -e 's/^  //' -e 's/^\( *\)require:$/\1require::/' -e "s/target=x86_64_v2/target=$1/g"
}

# write_profile_scope DIR MACHINE FILESYSTEM [VERSION...]: the profile of clients of
# MACHINE (uname -m) on FILESYSTEM (empty: any) into DIR/packages.yaml; the VERSIONs are
# those of the family's toolchain.externals, in order (toolchain_external_versions). DIR
# is removed for the default profile. Prints DIR when it wrote one.
write_profile_scope() {
  local dir=$1 machine=$2 fs=${3:-} target toolchain=null wanted
  shift 3 || shift $#
  target=$(profile_target "$machine")
  [[ -z $fs ]] || toolchain=$(jq -c '.toolchain // null' "$(family_file "$fs")")
  rm -rf "$dir"
  [[ -n $target || $toolchain != null ]] || return 0
  wanted=$(jq '.externals // [] | length' <<<"$toolchain")
  (($# >= wanted)) || die "toolchain: the $fs profile needs the installed versions of $(jq -r '[.externals[].spack] | join(", ")' <<<"$toolchain")"
  mkdir -p "$dir"
  {
    echo "# Written by scripts/lib/spack.sh: the toolchain profile of $machine clients${fs:+ of $fs}."
    echo "packages:"
    [[ -z $target ]] || retargeted_packages "$target"
    jq -r --args '(.require // {} | to_entries[] | "  \(.key):", "    require:", (.value[] | "    - \(.)")),
      (.externals // [] | to_entries[] | "  \(.value.spack):", "    buildable: false", "    externals:",
        "    - spec: \(.value.spack)@\($ARGS.positional[.key])", "      prefix: \(.value.prefix)")' "$@" <<<"$toolchain"
  } >"$dir/packages.yaml"
  printf '%s\n' "$dir"
}

# Spack runs from the kit's own config scope and cache, never ~/.spack.
spack_env_vars() {
  export SPACK_USER_CONFIG_PATH=$KIT_SCOPE
  export SPACK_USER_CACHE_PATH=$PFSLAB_PREFIX/spack-cache
  mkdir -p "$SPACK_USER_CONFIG_PATH" "$SPACK_USER_CACHE_PATH"
}

ensure_prefix() {
  { mkdir -p "$PFSLAB_PREFIX" 2>/dev/null && [[ -w $PFSLAB_PREFIX ]]; } ||
    die "cannot write $PFSLAB_PREFIX (the toolchain's prefix); run as root or set PFSLAB_PREFIX"
}

# Only one toolchain or mirror step at a time per prefix.
lock_prefix() {
  exec {PFSLAB_LOCK_FD}>"$PFSLAB_PREFIX/.spack-step.lock"
  flock -n "$PFSLAB_LOCK_FD" || die "another 'make toolchain' or 'make mirror' is running on $PFSLAB_PREFIX"
}

# Spack at the pinned release into $1: from a bundle's tarball ($2) or by git clone.
install_spack() {
  local dest=$1 tarball=${2:-} release commit url got
  release=$(release_pin SPACK_RELEASE)
  commit=$(release_pin SPACK_RELEASE_COMMIT)
  url=$(release_pin SPACK_GIT_URL)
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  if [[ -n $tarball ]]; then
    log "unpacking Spack $release from the bundle into $dest"
    tar -xzf "$tarball" -C "$dest.partial" || die "cannot unpack $tarball"
  else
    require_cmd git
    log "cloning Spack $release into $dest"
    git clone --quiet --depth 1 --branch "$release" "$url" "$dest.partial" >&2 ||
      die "cannot clone Spack $release from $url (no network? use MIRROR=<bundle> or SPACK_ROOT=<a Spack checkout>)"
    got=$(git -C "$dest.partial" rev-parse HEAD)
    [[ $got == "$commit" ]] || die "Spack $release from $url is commit $got, spack/release.conf pins $commit"
  fi
  [[ -x $dest.partial/bin/spack ]] || die "no bin/spack in the Spack unpacked into $dest.partial"
  mv "$dest.partial" "$dest"
}

# SPACK_ROOT if set (a site's Spack), else the kit's copy at the pinned release.
# $1: a bundle directory, or empty.
setup_spack() {
  local bundle=${1:-}
  if [[ -n ${SPACK_ROOT:-} ]]; then
    [[ -x $SPACK_ROOT/bin/spack ]] || die "SPACK_ROOT=$SPACK_ROOT has no bin/spack; point it at a Spack checkout or unset it"
  else
    # Not $PFSLAB_PREFIX/spack: images put the kit itself (with its spack/) at /opt/pfslab.
    SPACK_ROOT=$PFSLAB_PREFIX/spack-root
    [[ -x $SPACK_ROOT/bin/spack ]] || install_spack "$SPACK_ROOT" "${bundle:+$bundle/spack.tar.gz}"
  fi
  export SPACK_ROOT
  SPACK=$SPACK_ROOT/bin/spack
  spack_env_vars
}

# Stop on a Spack older than the pinned minimum; print the version.
check_spack_version() {
  local out version min
  min=$(release_pin SPACK_MIN_VERSION)
  out=$("$SPACK" --version) || die "'$SPACK --version' failed (its error is above); is SPACK_ROOT=$SPACK_ROOT a Spack checkout?"
  out=${out##*$'\n'}
  version=${out%% *}
  [[ $version =~ ^[0-9]+(\.[0-9]+)+ ]] || die "cannot read a version from '$SPACK --version': $out"
  version_ge "$version" "$min" ||
    die "Spack $version at $SPACK_ROOT is older than the kit's minimum $min (spack/release.conf); unset SPACK_ROOT to use the pinned $(release_pin SPACK_RELEASE)"
  printf '%s\n' "$version"
}

# Spack's builtin package repository at the pinned commit; prints the repository path.
# PFSLAB_SPACK_PACKAGES names an existing spack-packages checkout instead.
# $1: a bundle directory, or empty.
ensure_builtin_repo() {
  local bundle=${1:-} commit url dir
  commit=$(release_pin SPACK_PACKAGES_COMMIT)
  url=$(release_pin SPACK_PACKAGES_GIT_URL)
  if [[ -n ${PFSLAB_SPACK_PACKAGES:-} ]]; then
    dir=$PFSLAB_SPACK_PACKAGES
    if [[ -d $dir/.git ]] && [[ $(git -C "$dir" rev-parse HEAD) != "$commit" ]]; then
      die "PFSLAB_SPACK_PACKAGES=$dir is not at the pinned commit $commit (spack/release.conf)"
    fi
  else
    dir=$PFSLAB_PREFIX/spack-packages/$commit
    if [[ ! -f $dir/repos/spack_repo/builtin/repo.yaml ]]; then
      rm -rf "$dir.partial"
      mkdir -p "$dir.partial"
      if [[ -n $bundle ]]; then
        log "unpacking Spack's builtin packages ($commit) from the bundle"
        tar -xzf "$bundle/spack-packages.tar.gz" -C "$dir.partial" || die "cannot unpack $bundle/spack-packages.tar.gz"
      else
        require_cmd git
        log "fetching Spack's builtin packages at $commit"
        {
          git -C "$dir.partial" init --quiet &&
            git -C "$dir.partial" fetch --quiet --depth 1 "$url" "$commit" &&
            git -C "$dir.partial" checkout --quiet FETCH_HEAD
        } >&2 || die "cannot fetch $url at $commit (no network? use MIRROR=<bundle> or PFSLAB_SPACK_PACKAGES=<checkout>)"
      fi
      mv "$dir.partial" "$dir"
    fi
  fi
  [[ -f $dir/repos/spack_repo/builtin/repo.yaml ]] || die "$dir has no repos/spack_repo/builtin/repo.yaml; is it a spack-packages checkout?"
  printf '%s\n' "$dir/repos/spack_repo/builtin"
}

# The kit's config scope: the builtin repository at the pinned commit.
write_repos_config() {
  cat >"$KIT_SCOPE/repos.yaml" <<EOF
# Written by scripts/lib/spack.sh: Spack's builtin packages at the commit pinned in
# spack/release.conf (the kit's own repository is named in spack/spack.yaml).
repos:
  builtin: $1
EOF
}

# The kit's config scope: install only from the bundle (sources, binaries, bootstrap),
# with every default mirror and bootstrap source dropped (::), so nothing reaches out.
# With no bundle, remove what an earlier air-gapped run wrote.
write_bundle_config() {
  local bundle=${1:-}
  if [[ -z $bundle ]]; then
    rm -f "$KIT_SCOPE/mirrors.yaml" "$KIT_SCOPE/bootstrap.yaml"
    return 0
  fi
  {
    echo "# Written by scripts/lib/spack.sh for the bundle $bundle"
    echo "mirrors::"
    echo "  pfslab-bundle-sources:"
    echo "    url: file://$bundle/mirror"
    echo "    source: true"
    echo "    binary: false"
    if [[ -d $bundle/buildcache ]]; then
      echo "  pfslab-bundle-binaries:"
      echo "    url: file://$bundle/buildcache"
      echo "    source: false"
      echo "    binary: true"
      echo "    signed: true"
    fi
  } >"$KIT_SCOPE/mirrors.yaml"
  cat >"$KIT_SCOPE/bootstrap.yaml" <<EOF
# Written by scripts/lib/spack.sh for the bundle $bundle
bootstrap:
  sources::
  - name: pfslab-bundle-binaries
    metadata: $bundle/bootstrap/metadata/binaries
  - name: pfslab-bundle-sources
    metadata: $bundle/bootstrap/metadata/sources
  trusted:
    pfslab-bundle-binaries: true
    pfslab-bundle-sources: true
EOF
}

# Concretize the environment (views untouched); writes spack.lock. An existing
# spack.lock is kept as long as spack.yaml still matches it; $1=--force redoes it.
concretize_env() {
  spk -c view:false -e "$PFSLAB_SPACK_ENV" concretize "$@"
}
