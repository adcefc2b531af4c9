# shellcheck shell=bash
# Root file systems for hosts on this machine (scripts/hosts), built with the kit's own
# image recipe: an mmdebstrap base, then the provisioning scripts Packer runs
# (packer/builds.pkr.hcl), in its order, with the environment it gives them, run in a
# chroot. Layered like qcow2 backing files: the base directory, each image an overlay
# upper over it, each host's own upper on top (its "disk"). Cached under
# build/host-images/ by digest: a second hosts-up with the same kit builds nothing.
# Sourced after common.sh and images.sh; defines functions only.

HOST_IMAGES=$PFSLAB_ROOT/build/host-images

# What only a VM needs (a kernel and initramfs to boot, udev, systemd as PID 1, DHCP on
# ifupdown): a host here shares this machine's kernel and gets its address from
# scripts/hosts. tini stands in for the init system: PID 1 of each host reaps the
# orphans the roles' daemons leave when they double-fork.
VM_ONLY_PACKAGES=" linux-image-cloud-amd64 initramfs-tools systemd-sysv udev dbus ifupdown isc-dhcp-client cloud-guest-utils "
HOST_EXTRA_PACKAGES=(tini)

host_base_packages() {
  local p
  for p in "${BASE_PACKAGES[@]}"; do
    [[ $VM_ONLY_PACKAGES == *" $p "* ]] || echo "$p"
  done
  printf '%s\n' "${HOST_EXTRA_PACKAGES[@]}"
}

host_base_digest() {
  local sum
  sum=$({
    printf '%s\n' "$BASE_SUITE" "$BASE_MIRROR" "$BASE_SECURITY"
    host_base_packages
    declare -f host_base_build
  } | sha256sum)
  echo "${sum%% *}"
}

# build/host-images/base-<digest16>/root, made once.
host_base_build() {
  local dir tmp start=$SECONDS
  dir=$HOST_IMAGES/base-$(host_base_digest | cut -c1-16)
  if [[ -e $dir/.done ]]; then
    log "base root file system $dir reused"
    echo "$dir/root"
    return 0
  fi
  require_cmd mmdebstrap
  mkdir -p "$HOST_IMAGES"
  tmp=$(mktemp -d "$HOST_IMAGES/.base.XXXXXX")
  log "building the base root file system (mmdebstrap $BASE_SUITE, minbase + $(host_base_packages | wc -l) packages)"
  if ! mmdebstrap --mode=root --variant=minbase --include="$(host_base_packages | paste -sd,)" \
    "$BASE_SUITE" "$tmp/root" \
    "deb $BASE_MIRROR $BASE_SUITE main" "deb $BASE_MIRROR $BASE_SUITE-updates main" \
    "deb $BASE_SECURITY $BASE_SUITE-security main" >"$tmp/mmdebstrap.log" 2>&1; then
    tail -n 5 "$tmp/mmdebstrap.log" >&2
    rm -rf "$tmp"
    die "mmdebstrap failed (the last lines are above)"
  fi
  rm -rf "$dir"
  mv "$tmp" "$dir"
  : >"$dir/.done"
  log "base root file system built in $((SECONDS - start)) s ($(du -sm "$dir/root" | cut -f1) MB)"
  echo "$dir/root"
}

# The shell provisioners of packer/builds.pkr.hcl that the qemu builder runs, in order
# (those without `only`, or whose `only` names qemu.debian): the script names. Read from
# the template itself, so the hosts' images follow the recipe as it changes.
image_recipe_steps() {
  awk '
    /^  provisioner "shell" \{/ { inblock = 1; only = ""; script = ""; next }
    inblock && /^    only *=/ { only = $0 }
    inblock && /^    script *=/ { script = $0; sub(/.*packer\/scripts\//, "", script); sub(/".*/, "", script) }
    inblock && /^  \}/ { if (script != "" && (only == "" || only ~ /qemu\.debian/)) print script; inblock = 0 }
  ' "$PFSLAB_ROOT/packer/builds.pkr.hcl"
}

# The components a role's image installs: the family's non-client roles (server) or
# its client roles (client), as packer/locals.pkr.hcl decides.
image_components() {
  local family=$1 role=$2
  jq -r --arg f "$family" --arg r "$role" 'select(.family == $f) | .roles[] | select((.client == true) == ($r == "client")) | .component' \
    "$PFSLAB_ROOT"/families/*/family.json | paste -sd' '
}

# The environment builds.pkr.hcl gives a step on the qemu builder (toolchain: distro on
# client images, the login node's benchmarks and the kit's Python environment).
image_step_env() {
  local step=$1 role=$2 family=$3 digest=$4 toolchain=off
  [[ $role == client ]] && toolchain=distro
  case $step in
    install-kit.sh)
      printf 'PFSLAB_IMAGE_JSON=%s\n' "$(jq -cn --arg role "$role" --arg family "$family" --arg digest "$digest" \
        --arg components "$(image_components "$family" "$role")" --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        --argjson tc "$([[ $toolchain != off ]] && echo true || echo false)" \
        '{role: $role, family: $family, components: ($components | split(" ")), digest: $digest, builder: "hosts", target: "baremetal", built_at: $at, toolchain: $tc}')" ;;
    install-roles.sh)
      printf '%s\n' "PFSLAB_FAMILY=$family" "PFSLAB_COMPONENTS=$(image_components "$family" "$role")" \
        PFSLAB_FABRIC=ethernet PFSLAB_TARGET=baremetal 'PFSLAB_FS_SETTINGS={}' ;;
    toolchain.sh) printf '%s\n' "PFSLAB_TOOLCHAIN=$toolchain" "PFSLAB_FAMILY=$family" ;;
  esac
}

# build/host-images/<role>-<family>-<digest16>/upper: the image's files over the base.
# Usage: host_image_build ROLE FAMILY BASE_ROOT   (prints the upper dir)
host_image_build() {
  local role=$1 family=$2 base=$3 kit sum key dir tmp start=$SECONDS steps
  kit=$(image_digest)
  steps=$(image_recipe_steps | paste -sd' ')
  sum=$(printf '%s\n' "$kit" "$role" "$family" "$base" "$steps" "$(declare -f host_image_build image_step_env host_image_provision)" | sha256sum)
  key=${sum%% *}
  dir=$HOST_IMAGES/$role-$family-${key:0:16}
  if [[ -e $dir/.done ]]; then
    log "$role image $dir reused (kit $(cut -c1-12 <<<"$kit"))"
    echo "$dir/upper"
    return 0
  fi
  tmp=$(mktemp -d "$HOST_IMAGES/.$role.XXXXXX")
  mkdir -p "$tmp/upper" "$tmp/work" "$tmp/merged"
  kit_archive "$tmp/kit.tar.gz"
  log "building the $role image of family $family: $steps (kit $(cut -c1-12 <<<"$kit"))"
  # A private mount namespace: whatever happens, no mount of the build outlives it.
  if ! unshare --mount --propagation private -- bash -c "$(declare -f log die host_image_provision image_step_env image_components); PFSLAB_ROOT='$PFSLAB_ROOT' host_image_provision '$base' '$tmp' '$role' '$family' '$kit' $steps" \
    >"$tmp/build.log" 2>&1; then
    tail -n 15 "$tmp/build.log" >&2
    cp "$tmp/build.log" "$HOST_IMAGES/$role-$family-failed.log"
    rm -rf "$tmp"
    die "building the $role image failed (last lines above; whole log: $HOST_IMAGES/$role-$family-failed.log)"
  fi
  rm -rf "$tmp/work" "$tmp/merged" "$tmp/kit.tar.gz"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  : >"$dir/.done"
  log "$role image built in $((SECONDS - start)) s ($(du -sm "$dir/upper" | cut -f1) MB over the base)"
  echo "$dir/upper"
}

# Inside the build's mount namespace: the overlay, what apt in a chroot needs, the kit
# archive where Packer's file provisioner puts it, then each step with its environment.
host_image_provision() {
  local base=$1 tmp=$2 role=$3 family=$4 kit=$5 step envs
  shift 5
  local m=$tmp/merged
  mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$m"
  mount -t proc proc "$m/proc"
  mount --rbind /dev "$m/dev"
  mount -t tmpfs tmpfs "$m/tmp"
  mount -t tmpfs tmpfs "$m/run"
  cp /etc/resolv.conf "$m/run/resolv.conf"
  mount --bind "$m/run/resolv.conf" "$m/etc/resolv.conf" 2>/dev/null ||
    { cp /etc/resolv.conf "$m/etc/resolv.conf"; }
  # Package scripts must not start daemons in the image: the roles start their own.
  printf '#!/bin/sh\nexit 101\n' >"$m/usr/sbin/policy-rc.d"
  chmod 755 "$m/usr/sbin/policy-rc.d"
  cp "$tmp/kit.tar.gz" "$m/tmp/pfslab-kit.tar.gz"
  # How this machine reaches package registries (a proxy, its CA), for the build only
  # (the build's /tmp; nothing of it stays in the image); its pip cache as a cache.
  local access=() var ca=${PIP_CERT:-${SSL_CERT_FILE:-${REQUESTS_CA_BUNDLE:-}}}
  for var in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST; do
    [[ -z ${!var:-} ]] || access+=("$var=${!var}")
  done
  if [[ -n $ca && -f $ca ]]; then
    cp "$ca" "$m/tmp/build-ca.pem"
    access+=(PIP_CERT=/tmp/build-ca.pem)
  fi
  if [[ -d /root/.cache/pip ]]; then
    mkdir -p "$m/root/.cache/pip"
    mount --bind /root/.cache/pip "$m/root/.cache/pip"
  fi
  for step in "$@"; do
    cp "$PFSLAB_ROOT/packer/scripts/$step" "$m/tmp/$step"
    mapfile -t envs < <(image_step_env "$step" "$role" "$family" "$kit")
    echo "=== $step ${envs[*]}"
    chroot "$m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      "${access[@]}" "${envs[@]}" bash "/tmp/$step" || { echo "step $step failed"; return 1; }
  done
  if umount "$m/root/.cache/pip" 2>/dev/null; then rmdir "$m/root/.cache/pip" "$m/root/.cache" 2>/dev/null || true; fi
  rm -f "$m/usr/sbin/policy-rc.d"
  umount "$m/etc/resolv.conf" 2>/dev/null || true
  : >"$m/etc/resolv.conf"
}
