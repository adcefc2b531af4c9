# shellcheck shell=bash
# Helpers shared by the node roles beyond common.sh: a redirectable root for every
# file a role writes, config files written only when they change, sizes, NVMe and
# NUMA discovery. Sourced after common.sh; defines functions only.
#
# Files: the roles run with umask 077, so what they create is private unless made
# readable on purpose. write_file takes the mode (644 by default: configs are not
# secret), conf_set keeps the file's, ensure_line makes a new system file 644; secrets
# (keyrings, BeeGFS's connAuthFile) are 600/400 where they are made.
umask 077
#
# PFSLAB_SYSROOT (default empty, meaning /) prefixes every path a role reads or writes
# under /etc, /sys, /proc, /dev and /data, so the bats tests run the roles against a
# scratch tree and never change the host.

sysroot() { printf '%s%s\n' "${PFSLAB_SYSROOT:-}" "$1"; }

# The default the kit's registry states for a setting of filesystem.<family>, for a node
# config that leaves it out (a resolved lab has it filled in; a Packer build's config
# has only what the build gives). The registry is the one place the value is written.
# Usage: family_default FILESYSTEM DOTTED.SETTING   (prints nothing when there is none)
family_default() {
  local fs=$1 field=$2 path
  path=".settings[.family] | .properties.${field//./.properties.}.default // empty"
  jq -r "$path" "$(family_file "$fs")"
}

# Whether this node is a network namespace of the kit's own host (machine_kind netns,
# the local target's, targets/local/target.json): it shares the host's kernel, name
# and /etc/hosts. Roles ask the node's kind, never its target's name: which targets
# make which machines is the registry's and the adapters' to say.
node_is_netns() {
  local kind
  kind=$(cfg_opt '.machine_kind')
  [[ -n $kind ]] || die "$PFSLAB_NODE_CONFIG has no machine_kind (the lab plan writes it: the target's machines[].kind)"
  [[ $kind == netns ]]
}

# Write stdin to a file when its content differs; print "changed" when it did.
# Usage: write_file PATH [MODE] < content      (PATH is taken as given, not prefixed)
# A file made where there was none is recorded for lab-down (record_created).
write_file() {
  local path=$1 mode=${2:-644} tmp new=
  make_dir "$(dirname "$path")"
  tmp=$(mktemp "$(dirname "$path")/.$(basename "$path").XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$path"; then
    rm -f "$tmp"
    return 0
  fi
  [[ -e $path ]] || new=1
  chmod "$mode" "$tmp"
  mv "$tmp" "$path"
  [[ -z $new ]] || record_created "$path"
  log "wrote ${path#"${PFSLAB_SYSROOT:-}"}"
  echo changed
}

# Set `key = value` in a BeeGFS-style config file (replace the key's line or append).
conf_set() {
  local file=$1 key=$2 value=$3
  if grep -qE "^[[:space:]]*${key}[[:space:]]*=" "$file"; then
    awk -v k="$key" -v v="$value" '
      $0 ~ "^[[:space:]]*" k "[[:space:]]*=" { print k " = " v; next } { print }' "$file" >"$file.new"
    # The rewritten file keeps the package's mode (the roles' umask 077 would hide it).
    chmod --reference="$file" "$file.new"
    mv "$file.new" "$file"
  else
    printf '%s = %s\n' "$key" "$value" >>"$file"
  fi
}

# A lab-file size (2m, 8M, 16G, 131072) in bytes; suffixes are powers of 1024.
size_bytes() {
  local s=$1 n unit
  [[ $s =~ ^([0-9]+)([kKmMgGtT]?)$ ]] || die "size '$s' is not a number with an optional K/M/G/T suffix"
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2],,}
  case $unit in
    k) echo $((n << 10)) ;;
    m) echo $((n << 20)) ;;
    g) echo $((n << 30)) ;;
    t) echo $((n << 40)) ;;
    *) echo "$n" ;;
  esac
}

# Bytes as the shortest exact size with a lower-case suffix: 2097152 -> 2m.
size_short() {
  local b=$1 unit
  for unit in t g m k; do
    case $unit in
      t) ((b >= 1 << 40 && b % (1 << 40) == 0)) && { echo "$((b >> 40))t"; return; } ;;
      g) ((b >= 1 << 30 && b % (1 << 30) == 0)) && { echo "$((b >> 30))g"; return; } ;;
      m) ((b >= 1 << 20 && b % (1 << 20) == 0)) && { echo "$((b >> 20))m"; return; } ;;
      k) ((b >= 1 << 10 && b % (1 << 10) == 0)) && { echo "$((b >> 10))k"; return; } ;;
    esac
  done
  echo "$b"
}

# True when a device path exists (a block device on a node; any file under a test root).
dev_exists() {
  local p
  p=$(sysroot "$1")
  [[ -b $p ]] || { [[ -n ${PFSLAB_SYSROOT:-} && -e $p ]]; }
}

# ---- the host's own files: what the lab adds, lab-down takes back -------------------------

# What the roles add to the host outside the kit's own folders, one JSON object a line in
# <paths.state>/host-changes (next to claimed-devices), for lab-down on an existing host
# (scripts/host-forget) to undo exactly that and nothing else:
#   {"op":"line","file":F,"line":L}   a line ensure_line appended (fstab, mdadm.conf)
#   {"op":"file","file":F}            a file a role made where there was none
#   {"op":"dir","dir":D}              a folder a role made where there was none
#   {"op":"md","dev":D,"members":[..]}        an md array the role created
#   {"op":"lvm","vg":V,"lv":L,"pvs":[..]}     an LVM volume the role created
# Paths are the node's (without PFSLAB_SYSROOT). Nothing is recorded without a node
# config that names paths.state, nor for a path under the kit's own folders (paths.*,
# /etc/pfslab, the kit): lab-down removes those whole.
host_ledger() {
  local state
  [[ -n ${PFSLAB_NODE_CONFIG:-} ]] || return 1
  state=$(cfg_opt '.paths.state')
  [[ -n $state ]] || return 1
  sysroot "$state/host-changes"
}

# Append one record (a JSON object) to the ledger; nothing when there is no ledger.
record_change() {
  local ledger
  ledger=$(host_ledger) || return 0
  mkdir -p "$(dirname "$ledger")" || die "cannot record a change to the host: $(dirname "$ledger") cannot be made"
  printf '%s\n' "$1" >>"$ledger" || die "cannot record a change to the host in $ledger"
}

# The node's path of a path a role wrote (PFSLAB_SYSROOT taken off), when it is the
# host's own: not under the kit's folders, nor outside the sysroot. Fails otherwise.
host_path() {
  local p=$1 root=${PFSLAB_SYSROOT:-} own owns=()
  if [[ -n $root ]]; then
    [[ $p == "$root"/* ]] || return 1
    p=${p#"$root"}
  fi
  mapfile -t owns < <(cfg_opt '.paths | (.state, .run, .log, .cluster) // empty' 2>/dev/null)
  for own in /etc/pfslab "$PFSLAB_ROOT" "${owns[@]}"; do
    [[ -n $own && ($p == "$own" || $p == "$own"/*) ]] && return 1
  done
  printf '%s\n' "$p"
}

# mkdir -p that records each folder it makes in the host's own tree (topmost first, so
# lab-down removes them deepest first, each only when empty).
make_dir() {
  local dir=$1 missing=() d p
  d=$dir
  while [[ -n $d && $d != / && ! -e $d ]]; do
    missing=("$d" "${missing[@]}")
    d=$(dirname "$d")
  done
  mkdir -p "$dir"
  for d in "${missing[@]}"; do
    p=$(host_path "$d") || continue
    record_change "$(jq -cn --arg d "$p" '{op: "dir", dir: $d}')"
  done
}

# Record that a role made the file PATH (given with the sysroot) where there was none.
record_created() {
  local p
  p=$(host_path "$1") || return 0
  record_change "$(jq -cn --arg f "$p" '{op: "file", file: $f}')"
}

# ---- devices: never erase what the lab was not given ------------------------------

# Disks that carry the running system (under /, /boot and swap, through partitions,
# LVM, RAID or LUKS): never written, never discovered as data drives.
system_disks() {
  local src
  {
    findmnt -rno SOURCE / 2>/dev/null || true
    findmnt -rno SOURCE /boot 2>/dev/null || true
    swapon --show=NAME --noheadings 2>/dev/null || true
  } | while read -r src; do
    [[ $src == /dev/* ]] || continue
    lsblk -nsro NAME,TYPE "$src" 2>/dev/null | awk '$2 == "disk" {print "/dev/" $1}'
  done | sort -u
}

# The output of a probe of device DEV: COMMAND... run as given. A probe that fails (the
# command missing, a column this util-linux lacks, any error) says nothing about the
# device, and its empty output would read as blank: one line naming why, exit 2.
probe_device() {
  local dev=$1 err out rc=0 why
  shift
  command -v "$1" >/dev/null || die "cannot tell whether $dev holds data: $1 is missing (install util-linux)"
  err=$(mktemp)
  out=$("$@" 2>"$err") || rc=$?
  why=$(grep -m 1 . "$err" || true)
  rm -f "$err"
  ((rc == 0)) || die "cannot tell whether $dev holds data: '$*' failed: ${why:-exit status $rc}"
  printf '%s\n' "$out"
}

# What writing a block device would destroy, as words for a message (empty: it is blank):
# the running system, mounts, holders (RAID, LVM, dm), partitions and any signature
# (file system, partition table, LVM label, md superblock). Files and missing paths
# (the bats tests' scratch devices) are blank. A probe that fails ends it (exit 2).
device_contents() {
  local dev found=() what
  dev=$(readlink -f "$1")
  [[ -b $dev ]] || return 0
  # The disks under it (itself for a disk, its disk for a partition).
  what=$(probe_device "$dev" lsblk -nsro NAME,TYPE "$dev") || exit 2
  # The system's disk is refused whatever else it holds: nothing more is asked of it.
  if [[ -n $(comm -12 <(awk '$2 == "disk" {print "/dev/" $1}' <<<"$what" | sort -u) <(system_disks)) ]]; then
    echo "the running system (the disk of /, /boot or swap)"
    return 0
  fi
  what=$(probe_device "$dev" lsblk -nro MOUNTPOINTS "$dev") || exit 2
  what=$(sed '/^$/d' <<<"$what" | sort -u | paste -sd' ' -)
  [[ -z $what ]] || found+=("mounted file systems ($what)")
  what=$(find "/sys/class/block/$(basename "$dev")/holders" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
  [[ -z $what ]] || found+=("holders (${what% })")
  what=$(probe_device "$dev" lsblk -nro NAME,TYPE "$dev") || exit 2
  what=$(awk '$2 == "part" {print $1}' <<<"$what" | paste -sd' ' -)
  [[ -z $what ]] || found+=("partitions ($what)")
  # wipefs without options only lists the signatures it sees.
  what=$(probe_device "$dev" wipefs --noheadings --output TYPE "$dev") || exit 2
  what=$(sed '/^$/d' <<<"$what" | sort -u | paste -sd' ' -)
  [[ -z $what ]] || found+=("signatures ($what)")
  local IFS=';'
  echo "${found[*]}"
}

# Whether the lab lists a device for wiping (node_groups[].wipe_devices, per device).
wipe_listed() {
  local dev listed
  dev=$(readlink -f "$1")
  while read -r listed; do
    [[ -n $listed && $(readlink -f "$listed") == "$dev" ]] && return 0
  done < <(cfg_opt '.wipe_devices // [] | .[]')
  return 1
}

# Call before any step that erases a device. Refuses, in one line naming the device and
# what is on it, unless it is blank or the lab lists it in wipe_devices; the disk of the
# running system and a mounted device are refused even then (in use now: erasing them
# under the system or a mount is never what listing meant).
claim_device() {
  local dev=$1 action=$2 found
  found=$(device_contents "$dev") || exit 2
  if [[ -n $found ]]; then
    if [[ $found == *"the running system"* || $found == *"mounted file systems"* ]]; then
      die "$dev holds ${found//;/, }; refusing to $action: it is in use (wipe_devices never covers the system's disk or a mounted device; unmount it first)"
    fi
    wipe_listed "$dev" ||
      die "$dev holds ${found//;/, }; refusing to $action (list it in the lab's node_groups[].wipe_devices if it may be erased)"
    log "$dev holds ${found//;/, }; the lab lists it in wipe_devices, so: $action"
  fi
  record_claim "$dev"
}

# The devices the lab's roles took, one a line in <paths.state>/claimed-devices: lab-down
# on an existing host (scripts/host-forget) wipes the signatures the lab wrote on these
# and on no other device.
record_claim() {
  local state dev
  state=$(cfg_opt '.paths.state')
  [[ -n $state ]] || return 0
  state=$(sysroot "$state")
  # Only a block device can carry what lab-down wipes.
  dev=$(readlink -f "$1" 2>/dev/null) && [[ -b $dev ]] || return 0
  mkdir -p "$state" || die "cannot record that the lab claims $dev: $state cannot be made"
  if ! grep -qxF -- "$dev" "$state/claimed-devices" 2>/dev/null; then
    printf '%s\n' "$dev" >>"$state/claimed-devices" || die "cannot record that the lab claims $dev in $state/claimed-devices"
  fi
}

# The NVMe namespaces (/dev/nvmeXn1) attached to NUMA node $1, in device order.
# The kernel's scan order is not the slot order (seed 002, A.4), so drives are chosen
# by the NUMA node sysfs reports, as the seed's check command reads it.
nvme_on_numa() {
  local want=$1 ctrl numa
  for ctrl in "$(sysroot /sys/class/nvme)"/nvme*; do
    [[ -e $ctrl ]] || continue
    numa=$(cat "$ctrl/device/numa_node" 2>/dev/null || cat "$ctrl/numa_node" 2>/dev/null || echo -1)
    # A single-socket machine reports -1: everything is on node 0.
    ((numa < 0)) && numa=0
    ((numa == want)) && nvme_ctrl_namespace "$ctrl"
  done | sort -un | sed 's|^|/dev/nvme|; s|$|n1|' | grep -vxF -f <(system_disks; echo /nonexistent) || true
}

# The number X of the block device /dev/nvmeXn1 of controller CTRL's first namespace
# (a /sys/class/nvme/nvmeK directory). Without multipath it is the controller's own
# (nvmeKn1). With native NVMe multipath the controller's entry is a path, nvmeXcKn1,
# and the block device is the subsystem's, nvmeXn1: X is not K when the numbers of
# controllers and subsystems differ (two paths to one drive, fabrics, a re-scan).
nvme_ctrl_namespace() {
  local ctrl=$1 entry name
  for entry in "$ctrl"/nvme*n1; do
    [[ -e $entry ]] || continue
    name=$(basename "$entry")
    if [[ $name =~ ^nvme([0-9]+)(c[0-9]+)?n1$ ]]; then
      echo "${BASH_REMATCH[1]}"
      return 0
    fi
  done
  # No namespace listed under the controller: its own number names it.
  name=$(basename "$ctrl")
  echo "${name#nvme}"
}

# The LBA format index of an NVMe namespace whose data size is $2 bytes (no metadata),
# and the index in use: prints "WANTED INUSE". Reads `nvme id-ns -o json`, whose
# lbafs[].ds is log2 of the data size and flbas's low nibble the format in use (the
# same table `nvme id-ns -H` prints as "LBA Format N : ... Data Size: 512 bytes").
nvme_lbaf() {
  local dev=$1 bytes=$2 ds json
  case $bytes in
    512) ds=9 ;;
    4096) ds=12 ;;
    *) die "lba_format_bytes $bytes is not 512 or 4096" ;;
  esac
  json=$(nvme id-ns "$dev" -o json) || die "nvme id-ns $dev failed; is it an NVMe namespace?"
  jq -r --argjson ds "$ds" '
    ([.lbafs | to_entries[] | select(.value.ds == $ds and (.value.ms // 0) == 0) | .key] | first // "none")
    as $w | "\($w) \(.flbas % 16)"' <<<"$json"
}

# Format an NVMe namespace to the wanted LBA data size unless it already uses it.
# Refuses a drive that something holds (a RAID member, a mapped device).
nvme_set_lba() {
  local dev=$1 bytes=$2 wanted inuse holders lbaf
  lbaf=$(nvme_lbaf "$dev" "$bytes")
  read -r wanted inuse <<<"$lbaf"
  [[ $wanted != none ]] || die "$dev has no LBA format with $bytes-byte data and no metadata (see 'nvme id-ns -H $dev')"
  [[ $wanted == "$inuse" ]] && return 0
  holders=$(sysroot "/sys/block/$(basename "$dev")/holders")
  if [[ -d $holders && -n $(ls -A "$holders") ]]; then
    die "$dev is in use ($(find "$holders" -mindepth 1 -printf '%f')); it cannot be reformatted to $bytes-byte LBAs"
  fi
  claim_device "$dev" "reformat it to $bytes-byte LBAs"
  log "formatting $dev with LBA format $wanted ($bytes-byte sectors); this erases it"
  nvme format "$dev" --lbaf="$wanted" --ses=0 --force >/dev/null
  nvme ns-rescan "${dev%n1}" >/dev/null 2>&1 || true
}

# The CPUs of NUMA node $1 as the kernel lists them (0-23,48-71).
numa_cpus() {
  local f
  f=$(sysroot "/sys/devices/system/node/node$1/cpulist")
  [[ -s $f ]] || die "NUMA node $1 does not exist on this machine ($f is missing)"
  cat "$f"
}

# A systemd drop-in that binds a service's CPUs and memory to one NUMA node.
# Prints "changed" when it wrote the file (the caller reloads systemd).
numa_dropin() {
  local unit=$1 numa=$2 cpus
  cpus=$(numa_cpus "$numa")
  write_file "$(sysroot "/etc/systemd/system/$unit.d/90-pfslab-numa.conf")" <<EOF
# Written by pfslab: run $unit on NUMA node $numa only (its drives and NIC are there).
[Service]
CPUAffinity=$cpus
NUMAPolicy=bind
NUMAMask=$numa
EOF
}

# Append a line to a file unless an identical line is already there. The line, and the
# file when there was none, are recorded for lab-down (host_ledger): it takes back that
# line and no other.
ensure_line() {
  local file=$1 line=$2 p
  make_dir "$(dirname "$file")"
  # A new file (fstab, mdadm.conf) is a system file every user may read.
  if [[ ! -e $file ]]; then
    : >"$file" && chmod 644 "$file"
    # Removed at lab-down only when, its lab lines gone, it is empty.
    if p=$(host_path "$file"); then record_change "$(jq -cn --arg f "$p" '{op: "file", file: $f, lines: true}')"; fi
  fi
  grep -qxF -- "$line" "$file" && return 0
  # A host file whose last line has no newline: the lab's line must not join it.
  [[ ! -s $file || -z $(tail -c 1 "$file") ]] || printf '\n' >>"$file"
  printf '%s\n' "$line" >>"$file"
  if p=$(host_path "$file"); then record_change "$(jq -cn --arg f "$p" --arg l "$line" '{op: "line", file: $f, line: $l}')"; fi
  log "added to ${file#"${PFSLAB_SYSROOT:-}"}: $line"
}

# The file system type on a device, empty when it carries none. blkid's exit status 2
# means it found no signature; any other failure says nothing, so it is refused.
fs_type_of() {
  local out rc=0
  command -v blkid >/dev/null || die "cannot tell whether $1 holds data: blkid is missing (install util-linux)"
  out=$(blkid -p -s TYPE -o value "$1" 2>/dev/null) || rc=$?
  ((rc == 0 || rc == 2)) || die "cannot tell whether $1 holds data: 'blkid -p -s TYPE -o value $1' failed (exit status $rc)"
  [[ -z $out ]] || printf '%s\n' "$out"
}

# Make a file system on a device unless it already carries one (never reformat data).
# Usage: mkfs_once DEV FSTYPE [OPTIONS...]
mkfs_once() {
  local dev=$1 fstype=$2 have
  shift 2
  have=$(fs_type_of "$dev") || exit 2
  if [[ -n $have ]]; then
    [[ $have == "$fstype" ]] || die "$dev already carries $have, not $fstype; wipe it by hand if it may be lost"
    return 0
  fi
  claim_device "$dev" "create $fstype on it"
  log "creating $fstype on $dev"
  "mkfs.$fstype" "$@" "$dev" >/dev/null
}

# Persist and mount a file system: an fstab line by UUID, then mount it if it is not.
# The line says nofail: a host whose lab device is gone (the lab taken down, the drive
# pulled) still boots instead of waiting at the fstab for it.
mount_persistent() {
  local dev=$1 mnt=$2 fstype=$3 opts=$4 uuid
  [[ ,$opts, == *,nofail,* ]] || opts+=,nofail
  make_dir "$(sysroot "$mnt")"
  uuid=$(blkid -s UUID -o value "$dev") || die "no UUID on $dev after mkfs"
  ensure_line "$(sysroot /etc/fstab)" "UUID=$uuid $mnt $fstype $opts 0 0"
  is_mounted "$mnt" || mount "$mnt"
}

# systemctl daemon-reload when any argument says "changed".
reload_if_changed() {
  [[ " $* " == *" changed "* ]] && systemctl daemon-reload
  return 0
}

# A service unit's state in one word (active, inactive, failed...).
unit_state() { systemctl is-active "$1" 2>/dev/null || true; }

# Debian codename of the node, for third-party apt repositories.
os_codename() {
  local f
  f=$(sysroot /etc/os-release)
  [[ -r $f ]] || die "$f is missing; cannot tell the distribution"
  # shellcheck disable=SC1090
  (. "$f" && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")
}
