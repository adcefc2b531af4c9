# shellcheck shell=bash
# Shim bodies are single-quoted on purpose: they expand when the shim runs.
# shellcheck disable=SC2016
# Shared setup of the role tests: bats-support/bats-assert, a sandbox PATH holding
# only harmless tools plus command shims, and node configs made from fixtures.
#
# A role runs with PATH = shims + a few safe tools: any command a test did not shim
# (mount, mdadm, systemctl, ...) is "command not found", so a role can never touch
# this host, and every shim appends its argv to $SHIM_LOG so tests assert the exact
# command lines. Files a role writes go under $PFSLAB_SYSROOT (a temp dir).

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

KIT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
FIXTURES=$BATS_TEST_DIRNAME/fixtures

# Tools a role may run for real: they only read, or write inside the sandbox.
SAFE_TOOLS=(bash cat mkdir mktemp mv rm cp chmod cmp ln jq sed awk grep sort head tail tr cut
  wc paste basename dirname find ls touch id tee sleep timeout stat readlink realpath seq date
  xargs ssh-keygen base64 sha256sum tar gzip env printf flock)

sandbox() {
  SHIMS=$BATS_TEST_TMPDIR/shims
  SAFE=$BATS_TEST_TMPDIR/safe
  SHIM_LOG=$BATS_TEST_TMPDIR/calls.log
  SHIM_STATE=$BATS_TEST_TMPDIR/state
  ROOT=$BATS_TEST_TMPDIR/root
  mkdir -p "$SHIMS" "$SAFE" "$SHIM_STATE" "$ROOT"
  : >"$SHIM_LOG"
  : >"$SHIM_STATE/mounts"
  : >"$SHIM_STATE/active"
  local t
  for t in "${SAFE_TOOLS[@]}"; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  export SHIM_LOG SHIM_STATE
}

# shim NAME [BODY]: a fake command that logs "NAME ARGS..." then runs BODY (bash, with
# the original arguments in "$@"); without BODY it succeeds silently.
shim() {
  local name=$1 body=${2:-}
  {
    echo '#!/bin/bash'
    printf 'printf "%%s\\n" "%s${*:+ $*}" >>"$SHIM_LOG"\n' "$name"
    printf '%s\n' "$body"
  } >"$SHIMS/$name"
  chmod +x "$SHIMS/$name"
}

# The calls of one command (or all), one per line.
calls() {
  if [[ -n ${1:-} ]]; then grep -E "^$1( |$)" "$SHIM_LOG" || true; else cat "$SHIM_LOG"; fi
}

# Shims of the service manager, mounts and block-device probes, backed by files in
# $SHIM_STATE so that a second run sees what the first did (idempotency tests).
common_shims() {
  shim systemctl '
case $1 in
  is-active) if grep -qx "$2" "$SHIM_STATE/active"; then echo active; else echo inactive; exit 3; fi ;;
  enable) shift; [[ $1 == --now ]] && shift; for u in "$@"; do echo "$u" >>"$SHIM_STATE/active"; done ;;
  start|restart) shift; for u in "$@"; do echo "$u" >>"$SHIM_STATE/active"; done ;;
  stop) shift; for u in "$@"; do sed -i "\|^$u\$|d" "$SHIM_STATE/active"; done ;;
esac'
  # findmnt -rn [-o COLS] --mountpoint MNT: lines of $SHIM_STATE/mounts are "MNT FSTYPE SOURCE".
  shim findmnt '
cols=TARGET; mnt=
while (($#)); do case $1 in -o) cols=$2; shift ;; --mountpoint) mnt=$2; shift ;; esac; shift; done
line=$(awk -v m="$mnt" "\$1 == m" "$SHIM_STATE/mounts")
[[ -n $line ]] || exit 1
read -r t f s <<<"$line"
case $cols in FSTYPE) echo "$f" ;; FSTYPE,SOURCE) echo "$f $s" ;; *) echo "$t" ;; esac'
  shim mount '
mnt=${!#}; fs=$(awk -v m="$mnt" "\$2 == m {print \$3}" "$PFSLAB_SYSROOT/etc/fstab" 2>/dev/null)
[[ $1 == -t ]] && fs=$2
echo "$mnt ${fs:-unknown} ${@: -2:1}" >>"$SHIM_STATE/mounts"'
  shim umount 'sed -i "\|^$1 |d" "$SHIM_STATE/mounts"'
  # blkid: -p -s TYPE -o value DEV reads $SHIM_STATE/fs/<dev>; -s UUID gives a fixed UUID.
  shim blkid '
dev=${!#}; key=${dev//\//_}
case " $* " in
  *" TYPE "*) [[ -s $SHIM_STATE/fs/$key ]] && cat "$SHIM_STATE/fs/$key" || exit 2 ;;
  *" UUID "*) echo "uuid${key}" ;;
esac'
  local fs
  for fs in ext4 xfs; do
    shim "mkfs.$fs" "mkdir -p \"\$SHIM_STATE/fs\"; dev=\${!#}; echo $fs >\"\$SHIM_STATE/fs/\${dev//\\//_}\""
  done
}

# A node config from a fixture: .node and .paths set for this test.
# Usage: node_config FIXTURE NAME GROUP INDEX ADDRESS ROLE... > prints the file path
node_config() {
  local fixture=$1 name=$2 group=$3 index=$4 address=$5 out
  shift 5
  out=$BATS_TEST_TMPDIR/$name.json
  jq --arg n "$name" --arg g "$group" --argjson i "$index" --arg a "$address" \
    --arg t "$BATS_TEST_TMPDIR/node/$name" --arg r "$*" '
    .node = {name: $n, group: $g, index: $i, address: $a, roles: ($r | split(" "))}
    | .paths = (.paths // {} | with_entries(.value |= sub("\\{tmp\\}"; $t)))' \
    "$FIXTURES/$fixture" >"$out"
  echo "$out"
}

# Run a role in the sandbox: role CONFIG FAMILY ACTION COMPONENT
# Run a role script in the sandbox: only the shims and safe tools on PATH, and the
# stand-in mount table (PFSLAB_MOUNTS, read by is_mounted) instead of mountinfo.
# A family's role script is families/<fs>/role (the folder whose family.json names it);
# the kit's own roles (common, slurm) are scripts/roles/<name>.
role() {
  local config=$1 family=$2 script file
  shift 2
  script=$KIT/scripts/roles/$family
  file=$(jq -rn --arg f "$family" 'first(inputs | select(.family == $f) | input_filename) // empty' "$KIT"/families/*/family.json)
  [[ -z $file ]] || script=${file%/family.json}/role
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$BATS_TEST_TMPDIR" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_MOUNTS="$SHIM_STATE/mounts" \
    PFSLAB_NODE_CONFIG="$config" PFSLAB_SYSROOT="$ROOT" ${ROLE_ENV[@]+"${ROLE_ENV[@]}"} \
    "$script" "$@"
}

# Fake NVMe controllers: fake_nvme NUMA FIRST COUNT -> nvmeFIRST..nvme(FIRST+COUNT-1)
fake_nvme() {
  local numa=$1 first=$2 count=$3 i
  for ((i = first; i < first + count; i++)); do
    mkdir -p "$ROOT/sys/class/nvme/nvme$i/device" "$ROOT/dev"
    echo "$numa" >"$ROOT/sys/class/nvme/nvme$i/device/numa_node"
    : >"$ROOT/dev/nvme${i}n1"
  done
}

# An nvme shim whose namespaces have two formats (0: 512 B, 1: 4096 B); the one in
# use is kept in $SHIM_STATE/lbaf/<dev> (default 0) and changed by `nvme format`.
nvme_shim() {
  shim nvme '
mkdir -p "$SHIM_STATE/lbaf"
case $1 in
  id-ns) f=$(cat "$SHIM_STATE/lbaf/$(basename "$2")" 2>/dev/null || echo 0)
         echo "{\"flbas\": $f, \"lbafs\": [{\"ms\": 0, \"ds\": 9, \"rp\": 2}, {\"ms\": 0, \"ds\": 12, \"rp\": 0}]}" ;;
  format) echo "${3#--lbaf=}" >"$SHIM_STATE/lbaf/$(basename "$2")" ;;
esac'
}

# ---- real loop devices (device_safety.bats, host_forget.bats) -----------------------

# Skip the test where no loop device can be made; else start its list of them (LOOPS).
need_loops() {
  [[ $(id -u) -eq 0 ]] || skip "needs root for loop devices"
  command -v losetup >/dev/null || skip "losetup (util-linux) is missing"
  LOOPS=()
}

# new_loop SIZE: a loop device over a sparse file of SIZE (truncate's units) in the
# test's temp dir; its path goes to DEV and LOOPS, which drop_loops detaches.
new_loop() {
  local img
  img=$(mktemp "$BATS_TEST_TMPDIR/disk.XXXXXX")
  truncate -s "$1" "$img"
  DEV=$(losetup -f --show "$img")
  LOOPS+=("$DEV")
}

# Detach the test's loop devices, first taking off what a test may have left that
# outlives the device: an LVM label and an md superblock (the host's LVM and md would
# find them on a later device over the same number), partitions (the kernel keeps them
# after the device is detached). Each step may find nothing to do.
drop_loops() {
  local dev
  for dev in ${LOOPS[@]+"${LOOPS[@]}"}; do
    pvremove -y "$dev" >/dev/null 2>&1 || true
    mdadm --zero-superblock "$dev" >/dev/null 2>&1 || true
    partx -d "$dev" 2>/dev/null || true
    losetup -d "$dev" 2>/dev/null || true
  done
}
