#!/usr/bin/env bats
# `make toolchain` and `make mirror` (scripts/toolchain, scripts/mirror) against a fake
# Spack: bad input stops with one clear line, a failed step keeps the previous views
# and spack.lock, a second run does nothing, the air-gapped bundle round-trips.
#
# The fake keeps Spack's real behaviour where it matters: `concretize` and `install`
# in an environment rebuild its views unless run with `-c view:false` (Spack 1.1
# rebuilds them even after a failed install), and a view is a symlink swapped to a
# new ._<name>/<hash> directory, the old one removed. Everything lives under
# $BATS_TEST_TMPDIR: the environment is a copy, the prefix a temp dir.

bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
  T=$BATS_TEST_TMPDIR
  export PFSLAB_PREFIX=$T/prefix
  export PFSLAB_SPACK_ENV=$T/env
  export SPACK_ROOT=$T/spack
  export PFSLAB_SPACK_PACKAGES=$T/spack-packages
  export FAKE_SPACK_LOG=$T/spack.log
  export FAKE_SPACK_VIEWS="$PFSLAB_PREFIX/view $PFSLAB_PREFIX/view-seed"
  unset MIRROR MIRROR_OUT PFSLAB_SPACK_EXTERNALS PFSLAB_TOOLCHAIN_FORCE FAKE_SPACK_FAIL FAKE_SPACK_VERSION \
    PFSLAB_TOOLCHAIN_FILESYSTEM PFSLAB_SYSROOT
  export PFSLAB_TOOLCHAIN_ARCH=x86_64
  mkdir -p "$PFSLAB_SPACK_ENV" "$PFSLAB_SPACK_PACKAGES/repos/spack_repo/builtin"
  cp -r "$REPO/spack/spack.yaml" "$REPO/spack/repo" "$PFSLAB_SPACK_ENV/"
  echo 'repo: {namespace: builtin, api: v2.2}' >"$PFSLAB_SPACK_PACKAGES/repos/spack_repo/builtin/repo.yaml"
  : >"$FAKE_SPACK_LOG"
  fake_spack "$SPACK_ROOT"
  # The key `spack gpg create` makes, and a gpg that reads "FPR <hex>" lines of a key
  # file as its primary keys (gpg --with-colons --show-keys output).
  export FAKE_SPACK_KEY=0123456789ABCDEF0123456789ABCDEF01234567
  mkdir -p "$T/bin"
  cat >"$T/bin/gpg" <<'EOF'
#!/usr/bin/env bash
awk '$1 == "FPR" {print "pub:u:4096:1:0000:::::::scESC:"; print "fpr:::::::::" $2 ":"}' "${!#}"
EOF
  chmod +x "$T/bin/gpg"
  export PATH=$T/bin:$PATH
}

fake_spack() {
  mkdir -p "$1/bin"
  cat >"$1/bin/spack" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$FAKE_SPACK_LOG"
views=1 env=
while (($#)); do
  case $1 in
    -c) [[ $2 == view:false ]] && views=0; shift 2 ;;
    -C) [[ -s $2/packages.yaml ]] || { echo "fake spack: -C $2 has no packages.yaml" >&2; exit 3; }; shift 2 ;;
    -e) env=$2; shift 2 ;;
    *) break ;;
  esac
done
store=$SPACK_USER_CACHE_PATH/../fake-store
regenerate() { # Spack's view swap: new dir per content, symlink renamed over, old dir removed
  local v old new
  for v in $FAKE_SPACK_VIEWS; do
    old=$(readlink "$v" 2>/dev/null || true)
    new=$(dirname "$v")/._$(basename "$v")/$(date +%s%N)
    mkdir -p "$new"
    cat "$store"/* >"$new/CONTENTS" 2>/dev/null || : >"$new/CONTENTS"
    ln -sfn "$new" "$v.tmp" && mv -T "$v.tmp" "$v"
    [[ -n $old ]] && rm -rf "$old"
  done
  return 0
}
case $1 in
  --version) echo "${FAKE_SPACK_VERSION:-1.1.0}" ;;
  concretize)
    [[ ${FAKE_SPACK_FAIL:-} == concretize ]] && { echo "==> Error: fake concretize failure" >&2; exit 1; }
    want="fake lock for $(sha256sum "$env/spack.yaml" | cut -d' ' -f1)"
    [[ -f $env/spack.lock && $(<"$env/spack.lock") == "fake lock"* && $(<"$env/spack.lock") != "$want" ]] &&
      echo "$want" >"$env/spack.lock"
    [[ -f $env/spack.lock ]] || echo "$want" >"$env/spack.lock"
    if ((views)); then regenerate; fi ;;
  install)
    if [[ ${FAKE_SPACK_FAIL:-} == install ]]; then
      ((views)) && { rm -rf "$store"; regenerate; } # what did not build drops out of the view
      echo "==> Error: fake build failure" >&2
      exit 1
    fi
    mkdir -p "$store"
    cp "$env/spack.lock" "$store/installed"
    if ((views)); then regenerate; fi ;;
  env) [[ $2 == view && $3 == regenerate ]] && regenerate ;;
  external) echo "packages: {openmpi: {externals: [{spec: openmpi@4.1.4, prefix: /usr}]}}" \
    >"$SPACK_USER_CONFIG_PATH/packages.yaml" ;;
  mirror) mkdir -p "$4" && echo sources >"$4/sources" ;;
  bootstrap) mkdir -p "$4/metadata/binaries" "$4/metadata/sources" ;;
  buildcache) out=${!#}; mkdir -p "$out" && echo binaries >"$out/index.json" ;;
  gpg)
    case $2 in
      create) while (($#)); do [[ $1 == --export ]] && echo "FPR $FAKE_SPACK_KEY" >"$2"; shift; done ;;
      trust) [[ -s $3 ]] ;;
      *) echo "fake spack: unexpected command: gpg $*" >&2; exit 3 ;;
    esac ;;
  *) echo "fake spack: unexpected command: $*" >&2; exit 3 ;;
esac
EOF
  chmod +x "$1/bin/spack"
}

toolchain() { run "$REPO/scripts/toolchain"; }

spack_calls() { grep -E "$1" "$FAKE_SPACK_LOG" || true; }

@test "an unknown MIRROR path stops before Spack is touched" {
  MIRROR=$T/no-such-bundle toolchain
  assert_failure 2
  assert_output "[toolchain] error: MIRROR=$T/no-such-bundle does not exist; give the directory 'make mirror' wrote (MIRROR_OUT)"
  assert_equal "$(cat "$FAKE_SPACK_LOG")" ""
  assert [ ! -e "$PFSLAB_PREFIX" ]
}

@test "a MIRROR that is not a bundle is refused" {
  mkdir -p "$T/random"
  MIRROR=$T/random toolchain
  assert_failure 2
  assert_output --partial "is not a pfslab bundle (no bundle.conf)"
  assert_equal "$(cat "$FAKE_SPACK_LOG")" ""
}

@test "a Spack older than the pinned minimum stops with the versions named" {
  FAKE_SPACK_VERSION=1.0.2 toolchain
  assert_failure 2
  min=$(sed -n 's/^SPACK_MIN_VERSION=//p' "$REPO/spack/release.conf")
  assert_output --partial "error: Spack 1.0.2 at $SPACK_ROOT is older than the kit's minimum $min (spack/release.conf)"
  assert_equal "$(spack_calls concretize)" ""
}

@test "a newer Spack than the minimum is accepted" {
  FAKE_SPACK_VERSION="1.2.0.dev0 (abcdef)" toolchain
  assert_success
}

@test "SPACK_ROOT without bin/spack is refused" {
  SPACK_ROOT=$T/empty toolchain
  assert_failure 2
  assert_output "[toolchain] error: SPACK_ROOT=$T/empty has no bin/spack; point it at a Spack checkout or unset it"
}

@test "first run concretizes, installs with the views off, then swaps the views" {
  toolchain
  assert_success
  assert_equal "$(sed 's/-e [^ ]*/-e ENV/' "$FAKE_SPACK_LOG")" "--version
-c view:false -e ENV concretize
-c view:false -e ENV install
-e ENV env view regenerate"
  assert [ -L "$PFSLAB_PREFIX/view" ]
  assert [ -L "$PFSLAB_PREFIX/view-seed" ]
  assert [ -f "$PFSLAB_SPACK_ENV/spack.lock" ]
  assert_output --partial "[toolchain] ready: $PFSLAB_PREFIX/view -> "
  grep -q "builtin: $PFSLAB_SPACK_PACKAGES/repos/spack_repo/builtin" "$PFSLAB_PREFIX/spack-config/repos.yaml"
}

@test "a second run is a no-op" {
  toolchain
  assert_success
  view=$(readlink "$PFSLAB_PREFIX/view")
  : >"$FAKE_SPACK_LOG"
  toolchain
  assert_success
  assert_output --partial "up to date: nothing changed since the last run"
  assert_equal "$(cat "$FAKE_SPACK_LOG")" "--version"
  assert_equal "$(readlink "$PFSLAB_PREFIX/view")" "$view"
}

@test "a changed spack.yaml runs every step again" {
  toolchain
  assert_success
  echo "# a change" >>"$PFSLAB_SPACK_ENV/spack.yaml"
  : >"$FAKE_SPACK_LOG"
  toolchain
  assert_success
  assert [ -n "$(spack_calls 'install')" ]
}

@test "a failed install keeps the previous views and spack.lock" {
  toolchain
  assert_success
  view=$(readlink "$PFSLAB_PREFIX/view")
  seed=$(readlink "$PFSLAB_PREFIX/view-seed")
  lock=$(cat "$PFSLAB_SPACK_ENV/spack.lock")
  echo "# io500 bumped" >>"$PFSLAB_SPACK_ENV/spack.yaml"
  : >"$FAKE_SPACK_LOG"
  FAKE_SPACK_FAIL=install toolchain
  assert_failure 2
  assert_line --partial "==> Error: fake build failure"
  assert_line "[toolchain] error: spack install failed (Spack's error is above); spack.lock restored and the views left as they were: $PFSLAB_PREFIX/view -> $view;$PFSLAB_PREFIX/view-seed -> $seed"
  assert_equal "$(readlink "$PFSLAB_PREFIX/view")" "$view"
  assert_equal "$(readlink "$PFSLAB_PREFIX/view-seed")" "$seed"
  assert [ -s "$view/CONTENTS" ]
  assert_equal "$(cat "$PFSLAB_SPACK_ENV/spack.lock")" "$lock"
  assert_equal "$(spack_calls 'regenerate')" ""
  # and the next good run is not mistaken for a no-op
  toolchain
  assert_success
  assert [ -n "$(spack_calls 'regenerate')" ]
}

@test "a failed install on a fresh node leaves no view and no spack.lock" {
  FAKE_SPACK_FAIL=install toolchain
  assert_failure 2
  assert_line --partial "spack install failed"
  assert [ ! -e "$PFSLAB_PREFIX/view" ]
  assert [ ! -e "$PFSLAB_SPACK_ENV/spack.lock" ]
  assert [ ! -e "$PFSLAB_PREFIX/toolchain.stamp" ]
}

@test "a failed concretization keeps the previous spack.lock" {
  toolchain
  lock=$(cat "$PFSLAB_SPACK_ENV/spack.lock")
  echo "# change" >>"$PFSLAB_SPACK_ENV/spack.yaml"
  FAKE_SPACK_FAIL=concretize toolchain
  assert_failure 2
  assert_line --partial "error: concretizing failed"
  assert_equal "$(cat "$PFSLAB_SPACK_ENV/spack.lock")" "$lock"
}

@test "PFSLAB_SPACK_EXTERNALS=1 records externals in the kit's scope, not the environment" {
  PFSLAB_SPACK_EXTERNALS=1 toolchain
  assert_success
  assert_equal "$(spack_calls '^external')" "external find --scope user openmpi mpich mvapich2 intel-oneapi-mpi libfabric rdma-core ucx pmix slurm"
  assert [ -f "$PFSLAB_PREFIX/spack-config/packages.yaml" ]
  assert_equal "$(spack_calls concretize | sed 's/-e [^ ]*/-e ENV/')" "-c view:false -e ENV concretize --force"
  run cmp -s "$PFSLAB_SPACK_ENV/spack.yaml" "$REPO/spack/spack.yaml"
  assert_success
}

@test "an aarch64 node: spack.yaml's requirements retargeted in its profile, concretized afresh, then a no-op" {
  PFSLAB_TOOLCHAIN_ARCH=aarch64 toolchain
  assert_success
  assert_line "[toolchain] toolchain profile of aarch64 clients: $PFSLAB_PREFIX/spack-profile/packages.yaml (over spack.yaml)"
  assert_equal "$(spack_calls concretize | sed 's/-e [^ ]*/-e ENV/')" "-C $PFSLAB_PREFIX/spack-profile -c view:false -e ENV concretize --force"
  profile=$PFSLAB_PREFIX/spack-profile/packages.yaml
  # every requirement list of spack.yaml, replaced (::), with the target swapped
  assert_equal "$(grep -c 'require::$' "$profile")" "$(grep -c '^ *require:$' "$PFSLAB_SPACK_ENV/spack.yaml")"
  assert_equal "$(grep -c 'x86_64_v2' "$profile")" 0
  run grep -A2 '^  fio:$' "$profile"
  assert_output "  fio:
    require::
    - *portable"
  run grep -A2 '^  all:$' "$profile"
  assert_output "  all:
    require::
    - &portable target=aarch64"
  : >"$FAKE_SPACK_LOG"
  PFSLAB_TOOLCHAIN_ARCH=aarch64 toolchain
  assert_success
  assert_output --partial "up to date: nothing changed since the last run"
  # back on x86_64: the lock made for aarch64 is not kept
  : >"$FAKE_SPACK_LOG"
  toolchain
  assert_success
  assert [ ! -e "$PFSLAB_PREFIX/spack-profile" ]
  assert_equal "$(spack_calls concretize | sed 's/-e [^ ]*/-e ENV/')" "-c view:false -e ENV concretize --force"
}

@test "a machine the kit does not build for stops in one line" {
  PFSLAB_TOOLCHAIN_ARCH=riscv64 toolchain
  assert_failure 2
  assert_line "[toolchain] error: toolchain: machine 'riscv64' (uname -m) is not one the kit builds for (x86_64, aarch64)"
  assert_equal "$(spack_calls concretize)" ""
}

@test "a BeeGFS node: IOR +beegfs against the installed BeeGFS client headers, or one line naming them" {
  PFSLAB_TOOLCHAIN_FILESYSTEM=beegfs toolchain
  assert_failure 2
  assert_output --partial "[toolchain] error: toolchain: the beegfs toolchain profile takes beegfs-client-dev from the system (/usr/include/beegfs/beegfs.h), and beegfs-client-dev (deb) / beegfs-client-devel (rpm) is not installed; 'scripts/roles/beegfs install client' installs it"
  assert_equal "$(spack_calls concretize)" ""
  printf '#!/bin/sh\necho 20:7.4.5-deb12\n' >"$T/bin/dpkg-query"
  chmod +x "$T/bin/dpkg-query"
  mkdir -p "$T/sysroot/usr/include/beegfs"
  : >"$T/sysroot/usr/include/beegfs/beegfs.h"
  PFSLAB_SYSROOT=$T/sysroot PFSLAB_TOOLCHAIN_FILESYSTEM=beegfs toolchain
  assert_success
  assert_equal "$(sed -n '/^packages:/,$p' "$PFSLAB_PREFIX/spack-profile/packages.yaml")" "packages:
  ior:
    require:
    - +beegfs
  beegfs-client-dev:
    buildable: false
    externals:
    - spec: beegfs-client-dev@7.4.5
      prefix: /usr"
  assert_equal "$(spack_calls concretize | sed 's/-e [^ ]*/-e ENV/')" "-C $PFSLAB_PREFIX/spack-profile -c view:false -e ENV concretize --force"
  assert_equal "$(spack_calls install | sed 's/-e [^ ]*/-e ENV/')" "-C $PFSLAB_PREFIX/spack-profile -c view:false -e ENV install"
}

@test "a file system no family has stops in one line naming the known ones, before anything is concretized" {
  PFSLAB_TOOLCHAIN_FILESYSTEM=nosuch toolchain
  assert_failure 2
  known=$(jq -r .filesystem "$REPO"/families/*/family.json | paste -sd, | sed 's/,/, /g')
  assert_line "[toolchain] error: unknown file system 'nosuch': one of $known (families/<fs>/family.json)"
  assert_equal "$(spack_calls concretize)" ""
  assert [ ! -e "$PFSLAB_PREFIX/spack-profile" ]
}

@test "make mirror refuses a non-empty directory that is not a bundle" {
  mkdir -p "$T/mine" && echo keep >"$T/mine/file"
  MIRROR_OUT=$T/mine run "$REPO/scripts/mirror"
  assert_failure 2
  assert_output "[mirror] error: MIRROR_OUT=$T/mine is a non-empty directory that is not a pfslab bundle; choose another path"
  assert_equal "$(cat "$T/mine/file")" keep
}

@test "a bundle from make mirror installs with no network, and its lock is used" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  for f in bundle.conf SHA256SUMS spack.tar.gz spack-packages.tar.gz spack.lock mirror/sources buildcache/index.json; do
    assert [ -e "$T/bundle/$f" ]
  done
  # The air-gapped node: another prefix, no SPACK_ROOT (Spack comes from the bundle),
  # no spack-packages checkout (it comes from the bundle too), a fresh environment.
  export PFSLAB_PREFIX=$T/airgap SPACK_ROOT= PFSLAB_SPACK_PACKAGES=
  unset SPACK_ROOT PFSLAB_SPACK_PACKAGES
  export FAKE_SPACK_VIEWS="$PFSLAB_PREFIX/view $PFSLAB_PREFIX/view-seed"
  rm -f "$PFSLAB_SPACK_ENV/spack.lock"
  : >"$FAKE_SPACK_LOG"
  MIRROR=$T/bundle PFSLAB_BUNDLE_KEY=$FAKE_SPACK_KEY toolchain
  assert_success
  assert [ -x "$PFSLAB_PREFIX/spack-root/bin/spack" ]
  assert_equal "$(cat "$PFSLAB_SPACK_ENV/spack.lock")" "$(cat "$T/bundle/spack.lock")"
  grep -q "^mirrors::" "$PFSLAB_PREFIX/spack-config/mirrors.yaml"
  grep -q "url: file://$T/bundle/buildcache" "$PFSLAB_PREFIX/spack-config/mirrors.yaml"
  grep -q "metadata: $T/bundle/bootstrap/metadata/binaries" "$PFSLAB_PREFIX/spack-config/bootstrap.yaml"
  assert [ -L "$PFSLAB_PREFIX/view" ]
}

@test "make mirror signs the build cache and ships the public key with its fingerprint printed" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  assert_line "[mirror] signing the build cache with key $FAKE_SPACK_KEY"
  assert_line --partial "build cache signed by key $FAKE_SPACK_KEY (signing-key.pub)"
  assert_line --partial "make toolchain MIRROR=<its path> BUNDLE_KEY=$FAKE_SPACK_KEY"
  run spack_calls "buildcache push"
  assert_output "-c view:false -e $PFSLAB_SPACK_ENV buildcache push --key $FAKE_SPACK_KEY --update-index $T/bundle/buildcache"
  run spack_calls "^gpg create"
  assert_output --partial "--export $T/bundle/signing-key.pub"
  assert_equal "$(cat "$T/bundle/signing-key.pub")" "FPR $FAKE_SPACK_KEY"
  grep -qx "SIGNING_KEY_FINGERPRINT=$FAKE_SPACK_KEY" "$T/bundle/bundle.conf"
  grep -q " signing-key.pub$" "$T/bundle/SHA256SUMS"
  [ -z "$(grep -e "--unsigned" "$FAKE_SPACK_LOG")" ]
}

@test "a signed bundle installs only with its key's fingerprint given: signatures checked, key trusted" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  export PFSLAB_PREFIX=$T/airgap FAKE_SPACK_VIEWS="$T/airgap/view $T/airgap/view-seed"
  unset SPACK_ROOT PFSLAB_SPACK_PACKAGES
  : >"$FAKE_SPACK_LOG"
  MIRROR=$T/bundle toolchain
  assert_failure 2
  assert_output "[toolchain] error: MIRROR=$T/bundle: its binaries are signed by key $FAKE_SPACK_KEY (signing-key.pub); compare it with the fingerprint 'make mirror' printed, then run again with BUNDLE_KEY=<that fingerprint>"
  [ ! -s "$FAKE_SPACK_LOG" ]
  MIRROR=$T/bundle PFSLAB_BUNDLE_KEY=$FAKE_SPACK_KEY toolchain
  assert_success
  assert_line "[toolchain] the bundle's signing key is $FAKE_SPACK_KEY, as BUNDLE_KEY says"
  run spack_calls "^gpg trust"
  assert_output "gpg trust $T/bundle/signing-key.pub"
  run spack_calls "install"
  assert_output "-c view:false -e $PFSLAB_SPACK_ENV install"
  grep -A4 "pfslab-bundle-binaries:" "$PFSLAB_PREFIX/spack-config/mirrors.yaml" | grep -qx "    signed: true"
  [ -z "$(grep "signed: false" "$PFSLAB_PREFIX/spack-config/mirrors.yaml")" ]
}

@test "a bundle whose signing key was swapped is refused, even with SHA256SUMS made again" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  echo "FPR FEDCBA9876543210FEDCBA9876543210FEDCBA98" >"$T/bundle/signing-key.pub"
  (cd "$T/bundle" && sha256sum spack.tar.gz spack-packages.tar.gz spack.lock signing-key.pub >SHA256SUMS)
  export PFSLAB_PREFIX=$T/airgap
  : >"$FAKE_SPACK_LOG"
  MIRROR=$T/bundle PFSLAB_BUNDLE_KEY=$FAKE_SPACK_KEY toolchain
  assert_failure 2
  assert_output "[toolchain] error: MIRROR=$T/bundle signing-key.pub: key fingerprint mismatch: expected $FAKE_SPACK_KEY (BUNDLE_KEY), got FEDCBA9876543210FEDCBA9876543210FEDCBA98; not trusted"
  [ ! -s "$FAKE_SPACK_LOG" ]
}

@test "installing without signature checks is refused" {
  PFSLAB_SPACK_INSTALL_ARGS="--fresh --no-check-signature" toolchain
  assert_failure 2
  assert_line "[toolchain] error: PFSLAB_SPACK_INSTALL_ARGS has --no-check-signature: the kit installs binaries only with their signatures checked"
  [ -z "$(spack_calls " install")" ]
}

@test "a damaged bundle is refused" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  echo tampered >>"$T/bundle/spack.lock"
  MIRROR=$T/bundle toolchain
  assert_failure 2
  assert_line "[toolchain] error: MIRROR=$T/bundle is damaged: SHA256SUMS does not match its files (copy it again)"
}

@test "a bundle made for another spack.yaml is refused" {
  MIRROR_OUT=$T/bundle run "$REPO/scripts/mirror"
  assert_success
  echo "# edited after the bundle was made" >>"$PFSLAB_SPACK_ENV/spack.yaml"
  MIRROR=$T/bundle toolchain
  assert_failure 2
  assert_output --regexp "MIRROR=$T/bundle was made for another spack.yaml \(sha256 [0-9a-f]{12}, this one [0-9a-f]{12}\); run 'make mirror' again"
}
