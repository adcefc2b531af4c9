# shellcheck shell=bash
# Helpers of the image tooling (scripts/images, scripts/image-digest,
# scripts/image-boot-test): the kit's file list and digest, the kit archive Packer
# copies into images, the Debian base of the qemu images, and QEMU's accelerator.
# Sourced after common.sh; defines functions and constants only.

IMAGES_DIR=${PFSLAB_IMAGES_DIR:-$PFSLAB_ROOT/build/images}

# What an image carries of the kit (under /opt/pfslab): nothing from build/ or .venv.
KIT_PATHS=(scripts families labs registry targets pfslab reframe spack pyproject.toml requirements.txt requirements.lock requirements-build.txt)

# ---- the Packer templates -------------------------------------------------------------

# packer_templates DIR: the template directory Packer gets (Packer reads one directory):
# packer/*.pkr.hcl but plugins.pkr.hcl (Debian's Packer 1.6.6 rejects its
# required_plugins block) and every targets/<target>/image.pkr.hcl as
# target-<target>.pkr.hcl, linked; builds.pkr.hcl with its `sources = []` filled with
# those files' sources, and in targets.pkr.hcl local.target (builder type -> the folder
# it is in: the node config's target) and local.image (builder type -> that file's
# local.target_<target>: fabric, toolchain_auto). A target with an image is its one file.
packer_templates() {
  local dir=$1 f target line type name sources=() targets=() seen=" "
  mkdir -p "$dir"
  for f in "$PFSLAB_ROOT"/packer/*.pkr.hcl; do
    case $(basename "$f") in
      plugins.pkr.hcl | builds.pkr.hcl) ;;
      *) ln -sf "$f" "$dir/" ;;
    esac
  done
  for f in "$PFSLAB_ROOT"/targets/*/image.pkr.hcl; do
    [[ -e $f ]] || continue
    target=$(basename "$(dirname "$f")")
    line=$(grep -E '^source "[^"]+" "[^"]+" \{' "$f" || true)
    [[ $line == source* && $line != *$'\n'* ]] ||
      die "targets/$target/image.pkr.hcl must hold exactly one source block (source \"TYPE\" \"NAME\" {)"
    type=$(cut -d'"' -f2 <<<"$line")
    name=$(cut -d'"' -f4 <<<"$line")
    [[ $seen != *" $type "* ]] ||
      die "targets/$target/image.pkr.hcl: builder $type is already another target's (local.target is keyed by builder type)"
    seen+="$type "
    grep -q "^  target_$target = {" "$f" ||
      die "targets/$target/image.pkr.hcl has no 'locals { target_$target = { fabric = ..., toolchain_auto = ... } }' (what the shared build steps take from it)"
    sources+=("\"source.$type.$name\"")
    targets+=("    \"$type\" = \"$target\"")
    images+=("    \"$type\" = local.target_$target")
    ln -sf "$f" "$dir/target-$target.pkr.hcl"
  done
  ((${#sources[@]})) || die "no targets/*/image.pkr.hcl: no image source to build"
  grep -qx '  sources = \[\]' "$PFSLAB_ROOT/packer/builds.pkr.hcl" ||
    die "packer/builds.pkr.hcl has no '  sources = []' line for the targets' sources"
  local list
  list=$(IFS=,; echo "${sources[*]}")
  sed "s|^  sources = \[\]\$|  sources = [${list//,/, }]|" "$PFSLAB_ROOT/packer/builds.pkr.hcl" >"$dir/builds.pkr.hcl"
  printf '# Written by scripts/images (packer_templates): per builder type, the folder of\n# its image.pkr.hcl and the facts that file gives the shared steps.\nlocals {\n  target = {\n%s\n  }\n  image = {\n%s\n  }\n}\n' \
    "$(printf '%s\n' "${targets[@]}")" "$(printf '%s\n' "${images[@]}")" >"$dir/targets.pkr.hcl"
}

# ---- the kit's files and their digest ------------------------------------------------

# The kit files an image carries, relative to the kit root, one per line, sorted
# byte-wise. In a git checkout: tracked and untracked files that .gitignore does not
# exclude (no __pycache__, no .spack-env); elsewhere the same paths found on disk,
# less the same caches.
image_files() {
  local p paths=()
  for p in "${KIT_PATHS[@]}"; do
    [[ -e $PFSLAB_ROOT/$p ]] && paths+=("$p")
  done
  ((${#paths[@]})) || die "no kit files under $PFSLAB_ROOT (looked for ${KIT_PATHS[*]})"
  if git -C "$PFSLAB_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$PFSLAB_ROOT" ls-files -z --cached --others --exclude-standard -- "${paths[@]}"
  else
    (cd "$PFSLAB_ROOT" && find "${paths[@]}" \( -name __pycache__ -o -name .mypy_cache -o -name .pytest_cache \
      -o -name .spack-env \) -prune -o \( -type f -o -type l \) ! -name '*.pyc' -print0)
  fi | kit_existing | LC_ALL=C sort -z | tr '\0' '\n' | kit_for_nodes
}

# A target's Terraform root and module run on the kit's machine only (and link shared
# files under terraform/, which nodes do not get), and its image.pkr.hcl is Packer's,
# as packer/ is: nodes carry its target.json. Its
# Python module (targets/aws/cloud.py) stays although nodes never run it: the registry,
# which nodes read to load a lab, refuses a target.json whose python file is missing.
kit_for_nodes() { grep -Ev '^targets/[^/]+/(root/|module/|image\.pkr\.hcl$)' || (($? == 1)); }

# Keep the NUL-separated paths that exist as files (git lists deleted files until
# they are staged); a symlink counts when it points at a file.
kit_existing() {
  local f
  while IFS= read -r -d '' f; do
    [[ -f $PFSLAB_ROOT/$f ]] && printf '%s\0' "$f"
  done
}

# Nodes run a family's role script as scripts/roles/<family>, beside the kit's own
# roles: the path first boot, the images' install step and every SSH call name, the same
# whichever folder the family lives in. So the image carries families/<fs>/role there
# too. "SOURCE<TAB>PATH" per file of the image (PATH where the image has it, SOURCE the
# kit file it is), sorted by PATH.
image_entries() {
  local f family
  while IFS= read -r f; do
    printf '%s\t%s\n' "$f" "$f"
    if [[ $f =~ ^families/([^/]+)/role$ ]]; then
      family=$(jq -r .family "$PFSLAB_ROOT/families/${BASH_REMATCH[1]}/family.json") ||
        die "families/${BASH_REMATCH[1]}/family.json: cannot read its family"
      printf '%s\tscripts/roles/%s\n' "$f" "$family"
    fi
  done < <(image_files) | LC_ALL=C sort -t $'\t' -k2,2
}

# "<sha256>  <mode>  <path>" per file: the contents, the executable bit (755/644,
# whatever the umask) and the path. The digest is taken over these lines.
image_manifest() {
  local src f mode sum
  while IFS=$'\t' read -r src f; do
    mode=644
    [[ -x $PFSLAB_ROOT/$src ]] && mode=755
    sum=$(sha256sum <"$PFSLAB_ROOT/$src")
    printf '%s  %s  %s\n' "${sum%% *}" "$mode" "$f"
  done < <(image_entries)
}

image_digest() {
  local manifest sum
  manifest=$(image_manifest)
  sum=$(sha256sum <<<"$manifest")
  echo "${sum%% *}"
}

# A gzip'd tar of exactly the files the digest covers (owner root, modes 755/644),
# with the manifest as .pfslab-manifest. Usage: kit_archive OUT.tar.gz
kit_archive() {
  local out=$1 list tmp src f
  list=$(mktemp)
  tmp=$(mktemp -d)
  image_files >"$list"
  image_manifest >"$tmp/.pfslab-manifest"
  tar -C "$PFSLAB_ROOT" --owner=0 --group=0 --numeric-owner --mode='u+rw,go+r,go-w' \
    -cf "$tmp/kit.tar" --verbatim-files-from -T "$list"
  # The role scripts' node copies (image_entries), staged at their image paths.
  : >"$list"
  while IFS=$'\t' read -r src f; do
    [[ $src != "$f" ]] || continue
    mkdir -p "$tmp/copies/$(dirname "$f")"
    cp -p "$PFSLAB_ROOT/$src" "$tmp/copies/$f"
    printf '%s\n' "$f" >>"$list"
  done < <(image_entries)
  [[ ! -s $list ]] || tar -C "$tmp/copies" --owner=0 --group=0 --numeric-owner --mode='u+rw,go+r,go-w' \
    -rf "$tmp/kit.tar" --verbatim-files-from -T "$list"
  tar -C "$tmp" --owner=0 --group=0 --numeric-owner -rf "$tmp/kit.tar" .pfslab-manifest
  gzip -n -c "$tmp/kit.tar" >"$out.partial"
  mv "$out.partial" "$out"
  rm -rf "$tmp" "$list"
}

# ---- the Debian base of the qemu images --------------------------------------------------

BASE_SUITE=bookworm
BASE_MIRROR=http://deb.debian.org/debian
BASE_SECURITY=http://deb.debian.org/debian-security
BASE_SIZE_MIB=3072
# A minimal Debian cloud system: a kernel with virtio, systemd, SSH, cloud-init and
# its NoCloud/ifupdown needs. Roles install the rest (apt works at build time).
BASE_PACKAGES=(linux-image-cloud-amd64 initramfs-tools systemd-sysv udev dbus openssh-server
  cloud-init cloud-guest-utils ifupdown isc-dhcp-client netbase iproute2 ca-certificates sudo
  procps e2fsprogs jq python3 less)
ROOT_LABEL=pfslab-root
KERNEL_APPEND="root=LABEL=$ROOT_LABEL ro console=ttyS0 net.ifnames=0"

# The base's cache key: its recipe (suite, mirrors, packages, size) and the code
# that builds it, so a change to either builds a new base.
base_digest() {
  local sum
  sum=$({
    printf '%s\n' "$BASE_SUITE" "$BASE_MIRROR" "$BASE_SECURITY" "$BASE_SIZE_MIB" "$KERNEL_APPEND" "${BASE_PACKAGES[@]}"
    declare -f build_base base_tree_fixups assemble_disk
  } | sha256sum)
  echo "${sum%% *}"
}

# Build the base once: build/images/base-<digest>.qcow2 with its kernel and initrd
# beside it (.vmlinuz, .initrd; qemu boots them directly). Prints the qcow2 path.
build_base() {
  local digest prefix tmp start
  digest=$(base_digest)
  prefix=$IMAGES_DIR/base-${digest:0:16}
  if [[ -s $prefix.qcow2 && -s $prefix.vmlinuz && -s $prefix.initrd ]]; then
    log "base image $prefix.qcow2 is up to date"
    echo "$prefix.qcow2"
    return 0
  fi
  require_root "building the Debian base (mmdebstrap --mode=root, mkfs.ext4 -d)"
  require_cmd mmdebstrap mkfs.ext4 sfdisk qemu-img
  mkdir -p "$IMAGES_DIR"
  tmp=$(mktemp -d "$IMAGES_DIR/.base.XXXXXX")
  start=$SECONDS
  log "building the Debian $BASE_SUITE base with mmdebstrap (a few minutes; log: $tmp/mmdebstrap.log)"
  if ! mmdebstrap --variant=minbase --mode=root --format=directory \
    --include="$(
      IFS=,
      echo "${BASE_PACKAGES[*]}"
    )" "$BASE_SUITE" "$tmp/root" \
    "deb $BASE_MIRROR $BASE_SUITE main" "deb $BASE_MIRROR $BASE_SUITE-updates main" \
    "deb $BASE_SECURITY $BASE_SUITE-security main" >"$tmp/mmdebstrap.log" 2>&1; then
    tail -n 5 "$tmp/mmdebstrap.log" >&2
    rm -rf "$tmp"
    die "mmdebstrap failed (the last lines are above)"
  fi
  base_tree_fixups "$tmp/root"
  cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
  cp "$tmp"/root/boot/initrd.img-* "$tmp/initrd"
  assemble_disk "$tmp/root" "$tmp/disk.raw"
  qemu-img convert -c -O qcow2 "$tmp/disk.raw" "$tmp/base.qcow2"
  mv "$tmp/vmlinuz" "$prefix.vmlinuz"
  mv "$tmp/initrd" "$prefix.initrd"
  mv "$tmp/base.qcow2" "$prefix.qcow2"
  rm -rf "$tmp"
  log "base image $prefix.qcow2 built in $((SECONDS - start))s"
  echo "$prefix.qcow2"
}

# What every machine booted from the base must not share, and how it finds its root.
base_tree_fixups() {
  local root=$1
  rm -f "$root"/etc/ssh/ssh_host_* "$root/etc/resolv.conf"
  : >"$root/etc/machine-id"
  rm -f "$root/var/lib/dbus/machine-id"
  printf 'LABEL=%s / ext4 defaults,errors=remount-ro 0 1\n' "$ROOT_LABEL" >"$root/etc/fstab"
  printf 'localhost\n' >"$root/etc/hostname"
  # Interface names are eth0... (net.ifnames=0) on every hypervisor and bare metal.
  mkdir -p "$root/etc/cloud/cloud.cfg.d"
  printf '%s\n' '# pfslab base: NoCloud (seed ISO) first, then the usual clouds.' \
    'datasource_list: [NoCloud, ConfigDrive, OpenStack, Ec2, Azure, GCE, None]' \
    >"$root/etc/cloud/cloud.cfg.d/90-pfslab-datasources.cfg"
}

# A raw disk with one bootable partition (1 MiB aligned) holding ext4 made from a
# directory: no loop devices, no mounts, so it works in a container.
assemble_disk() {
  local root=$1 disk=$2 offset=1048576
  truncate -s "${BASE_SIZE_MIB}M" "$disk"
  printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$disk"
  mkfs.ext4 -q -F -L "$ROOT_LABEL" -d "$root" -E offset=$offset "$disk" "$(((BASE_SIZE_MIB - 1) * 1024))k"
}

# ---- QEMU ------------------------------------------------------------------------------

# kvm when /dev/kvm can really run a guest, else tcg. A usable-looking /dev/kvm can
# still fail on the first instructions (nested virtualisation without the features
# QEMU wants), so the probe boots the kernel until it panics for want of a root
# file system. PFSLAB_QEMU_ACCEL=kvm|tcg skips the probe. Usage: qemu_accel KERNEL
qemu_accel() {
  local kernel=$1 log pid waited=0 verdict=tcg
  case ${PFSLAB_QEMU_ACCEL:-} in
    kvm | tcg) echo "$PFSLAB_QEMU_ACCEL"; return 0 ;;
    '') ;;
    *) die "PFSLAB_QEMU_ACCEL='$PFSLAB_QEMU_ACCEL' is not kvm or tcg" ;;
  esac
  if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
    echo tcg
    return 0
  fi
  log=$(mktemp)
  # All in a group with stderr closed to the terminal: bash reports a QEMU that dies
  # of a signal (KVM asserts abort it) as "Aborted" on stderr.
  {
    qemu-system-x86_64 -accel kvm -cpu host -m 256 -nodefaults -display none -no-reboot \
      -serial "file:$log" -kernel "$kernel" -append 'console=ttyS0 panic=-1 root=/dev/nonexistent' \
      >"$log.err" 2>&1 &
    pid=$!
    # A working KVM reaches the root-mount panic in a few seconds.
    while kill -0 "$pid" && ((waited < 60)); do
      if grep -qa 'Kernel panic' "$log"; then
        verdict=kvm
        break
      fi
      grep -qa 'KVM internal error\|emulation failure' "$log" "$log.err" && break
      sleep 0.5
      waited=$((waited + 1))
    done
    grep -qa 'Kernel panic' "$log" && verdict=kvm
    kill "$pid" || true
    wait "$pid" || true
  } 2>/dev/null
  rm -f "$log" "$log.err"
  echo "$verdict"
}

# The CPU model for an accelerator: the host's under KVM, everything TCG emulates
# (SSE4.2, AVX2...) otherwise.
qemu_cpu() {
  case $1 in
    kvm) echo host ;;
    *) echo max ;;
  esac
}
