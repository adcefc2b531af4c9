#!/usr/bin/env bats
# shellcheck disable=SC2016
# The BeeGFS role against command shims: the seed's layout (seed 002, 3.2-3.7, 4, 4.1,
# A.4) becomes exact nvme/mdadm/mkfs/beegfs-setup/systemctl/beegfs-ctl command lines.

load helpers

setup() {
  sandbox
  common_shims
  nvme_shim
  shim mdadm '
if [[ $1 == --create ]]; then mkdir -p "$PFSLAB_SYSROOT/dev/md"; : >"$PFSLAB_SYSROOT$2"; fi
if [[ $1 == --detail ]]; then echo "ARRAY $3 metadata=1.2 name=$(basename "$3") UUID=00:$(basename "$3")"; fi'
  for s in meta storage; do
    shim "beegfs-setup-$s" '
while getopts "c:p:s:S:i:m:" o; do [[ $o == p ]] && p=$OPTARG; done
mkdir -p "$PFSLAB_SYSROOT$p" && : >"$PFSLAB_SYSROOT$p/format.conf"'
  done
  shim beegfs-setup-mgmtd 'mkdir -p "$PFSLAB_SYSROOT${4}" && : >"$PFSLAB_SYSROOT${4}/format.conf"'
  mkdir -p "$ROOT/etc/beegfs" "$ROOT/sys/devices/system/node/node0" "$ROOT/sys/devices/system/node/node1"
  echo "0-23,48-71" >"$ROOT/sys/devices/system/node/node0/cpulist"
  echo "24-47,72-95" >"$ROOT/sys/devices/system/node/node1/cpulist"
  local svc
  for svc in meta storage mgmtd client mon; do
    printf '%s\n' "sysMgmtdHost =" "connInterfacesFile =" "tuneNumWorkers = 12" "logLevel = 2" >"$ROOT/etc/beegfs/beegfs-$svc.conf"
  done
  # The connection secret as the bring-up copies it to every BeeGFS node.
  AUTH=$ROOT/etc/pfslab/cluster/beegfs.auth
  mkdir -p "$ROOT/etc/pfslab/cluster"
  printf 'given-secret' >"$AUTH"
  chmod 400 "$AUTH"
  # The seed's metadata server: 12 NVMe drives on NUMA 0, 12 on NUMA 1.
  fake_nvme 0 0 12
  fake_nvme 1 12 12
}

@test "meta on the seed's MDS: 6 RAID1 pairs of 512 B drives on NUMA 0, ext4, one multi-mode service each" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta beegfs-storage)
  role "$cfg" beegfs configure meta
  assert_success
  # The drives already use 512-byte LBAs (format 0): nothing is reformatted.
  run calls nvme
  refute_line --partial "nvme format"
  run calls mdadm
  assert_line --index 0 "mdadm --create /dev/md/pfs_meta0 --run --level=1 --raid-devices=2 --metadata=1.2 /dev/nvme0n1 /dev/nvme1n1"
  assert_line "mdadm --create /dev/md/pfs_meta5 --run --level=1 --raid-devices=2 --metadata=1.2 /dev/nvme10n1 /dev/nvme11n1"
  [ "$(calls mdadm | grep -c -- --create)" -eq 6 ]
  run calls mkfs.ext4
  assert_line --index 0 "mkfs.ext4 -i 2048 -I 512 -J size=400 -O dir_index,filetype /dev/md/pfs_meta0"
  [ "${#lines[@]}" -eq 6 ]
  run calls beegfs-setup-meta
  assert_line --index 0 "beegfs-setup-meta -c $ROOT/etc/beegfs/meta0.d/beegfs-meta.conf -p /data/beegfs/meta0/beegfs_meta -s 1 -S mds0-numa0-meta0 -m mgmt0"
  assert_line --index 5 "beegfs-setup-meta -c $ROOT/etc/beegfs/meta5.d/beegfs-meta.conf -p /data/beegfs/meta5/beegfs_meta -s 6 -S mds0-numa0-meta5 -m mgmt0"
  run calls mount
  assert_line --index 0 "mount /data/beegfs/meta0"
  grep -qx "UUID=uuid_dev_md_pfs_meta0 /data/beegfs/meta0 ext4 noatime,nodiratime,nofail 0 0" "$ROOT/etc/fstab"
  grep -qx "ARRAY /dev/md/pfs_meta0 metadata=1.2 name=pfs_meta0 UUID=00:pfs_meta0" "$ROOT/etc/mdadm/mdadm.conf"
  # The seed's metadata tuning, the instance's own port and interfaces.
  conf=$ROOT/etc/beegfs/meta1.d/beegfs-meta.conf
  grep -qx "tuneTargetChooser = roundrobin" "$conf"
  grep -qx "tuneNumWorkers = 24" "$conf"
  grep -qx "connMaxInternodeNum = 32" "$conf"
  grep -qx "connMetaPortTCP = 8015" "$conf"
  grep -qx "connMetaPortUDP = 8015" "$conf"
  grep -qx "sysMgmtdHost = mgmt0" "$conf"
  grep -qx "connInterfacesFile = /etc/beegfs/meta1.d/connInterfacesFile" "$conf"
  [ "$(cat "$ROOT/etc/beegfs/meta1.d/connInterfacesFile")" = ib0 ]
  # NUMA pinning: a systemd drop-in per instance, then one daemon-reload.
  dropin=$ROOT/etc/systemd/system/beegfs-meta@meta3.service.d/90-pfslab-numa.conf
  grep -qx "CPUAffinity=0-23,48-71" "$dropin"
  grep -qx "NUMAPolicy=bind" "$dropin"
  grep -qx "NUMAMask=0" "$dropin"
  [ "$(calls systemctl)" = "systemctl daemon-reload" ]
}

@test "storage on the seed's MDS: NUMA 1 drives formatted to 4 KiB, 3 RAID0 groups of 4, XFS, pinned to NUMA 1" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta beegfs-storage)
  role "$cfg" beegfs configure storage
  assert_success
  run calls nvme
  assert_line "nvme format /dev/nvme12n1 --lbaf=1 --ses=0 --force"
  assert_line "nvme format /dev/nvme23n1 --lbaf=1 --ses=0 --force"
  [ "$(calls nvme | grep -c '^nvme format')" -eq 12 ]
  run calls mdadm
  assert_line "mdadm --create /dev/md/pfs_stor0 --run --level=0 --raid-devices=4 --metadata=1.2 /dev/nvme12n1 /dev/nvme13n1 /dev/nvme14n1 /dev/nvme15n1"
  assert_line "mdadm --create /dev/md/pfs_stor2 --run --level=0 --raid-devices=4 --metadata=1.2 /dev/nvme20n1 /dev/nvme21n1 /dev/nvme22n1 /dev/nvme23n1"
  run calls mkfs.xfs
  assert_output "$(printf 'mkfs.xfs /dev/md/pfs_stor%s\n' 0 1 2)"
  run calls beegfs-setup-storage
  assert_output "$(for k in 0 1 2; do echo "beegfs-setup-storage -c $ROOT/etc/beegfs/storage$k.d/beegfs-storage.conf -p /data/beegfs/stor$k/beegfs_storage -s $((k + 1)) -S mds0-numa1-storage$k -i $((k + 1)) -m mgmt0"; done)"
  conf=$ROOT/etc/beegfs/storage2.d/beegfs-storage.conf
  grep -qx "tuneNumWorkers = 32" "$conf"
  grep -qx "connMaxInternodeNum = 12" "$conf"
  grep -qx "connStoragePortTCP = 8023" "$conf"
  [ "$(cat "$ROOT/etc/beegfs/storage2.d/connInterfacesFile")" = ib1 ]
  grep -qx "CPUAffinity=24-47,72-95" "$ROOT/etc/systemd/system/beegfs-storage@storage0.service.d/90-pfslab-numa.conf"
  grep -qx "NUMAMask=1" "$ROOT/etc/systemd/system/beegfs-storage@storage0.service.d/90-pfslab-numa.conf"
}

@test "a dedicated storage server: one service per NUMA zone with 3 targets each, ids from id_base" {
  cfg=$(node_config beegfs.json ss1 ss 1 10.10.0.3 beegfs-storage)
  role "$cfg" beegfs configure storage
  assert_success
  run calls beegfs-setup-storage
  assert_line --index 0 "beegfs-setup-storage -c $ROOT/etc/beegfs/storage0.d/beegfs-storage.conf -p /data/beegfs/stor0/beegfs_storage -s 201 -S ss1-numa0-storage0 -i 201 -m mgmt0"
  assert_line --index 2 "beegfs-setup-storage -c $ROOT/etc/beegfs/storage0.d/beegfs-storage.conf -p /data/beegfs/stor2/beegfs_storage -s 201 -S ss1-numa0-storage0 -i 203 -m mgmt0"
  assert_line --index 3 "beegfs-setup-storage -c $ROOT/etc/beegfs/storage1.d/beegfs-storage.conf -p /data/beegfs/stor3/beegfs_storage -s 202 -S ss1-numa1-storage1 -i 204 -m mgmt0"
  assert_line --index 5 "beegfs-setup-storage -c $ROOT/etc/beegfs/storage1.d/beegfs-storage.conf -p /data/beegfs/stor5/beegfs_storage -s 202 -S ss1-numa1-storage1 -i 206 -m mgmt0"
  run calls mdadm
  assert_line "mdadm --create /dev/md/pfs_stor3 --run --level=0 --raid-devices=4 --metadata=1.2 /dev/nvme12n1 /dev/nvme13n1 /dev/nvme14n1 /dev/nvme15n1"
  [ "$(calls nvme | grep -c '^nvme format')" -eq 24 ]
}

@test "configure is idempotent: the second run formats, creates and initialises nothing" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta beegfs-storage)
  role "$cfg" beegfs configure storage
  assert_success
  : >"$SHIM_LOG"
  role "$cfg" beegfs configure storage
  assert_success
  run calls
  refute_line --partial "nvme format"
  refute_line --partial "mdadm --create"
  refute_line --partial "mkfs."
  refute_line --partial "beegfs-setup-storage"
  refute_line --partial "mount /data"
  refute_line "systemctl daemon-reload"
  [ "$(grep -c pfs_stor0 "$ROOT/etc/fstab")" -eq 1 ]
}

@test "start enables one unit per service; health checks units, mounts and LBA formats" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta beegfs-storage)
  role "$cfg" beegfs up storage
  assert_success
  run calls systemctl
  assert_line "systemctl enable --now beegfs-storage@storage0.service"
  assert_line "systemctl enable --now beegfs-storage@storage2.service"
  role "$cfg" beegfs health storage
  assert_success
  assert_output "beegfs-storage@mds0: 3 service(s) active, targets mounted, 12 drive(s) at 4096-byte LBAs"
  # A drive put back to 512-byte sectors is a finding of the device preflight.
  echo 0 >"$SHIM_STATE/lbaf/nvme13n1"
  role "$cfg" beegfs health storage
  assert_failure 1
  assert_output "beegfs-storage@mds0: /dev/nvme13n1 uses LBA format 0, not the 4096-byte format 1"
}

@test "a layout needing more drives than the NUMA node has fails with one line" {
  rm -rf "$ROOT/sys/class/nvme/nvme23"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-storage)
  role "$cfg" beegfs configure storage
  assert_failure 2
  assert_output "[beegfs:storage@mds0] error: beegfs storage: NUMA node 1 has 11 NVMe drive(s) left for this layout; target 2 needs 4 more (used 8)"
  [ -z "$(calls mdadm)" ]
}

@test "client: mgmt host, client tuning, beegfs-mounts.conf; the first client sets the seed's stripe pattern" {
  cfg=$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)
  echo "/mnt/beegfs beegfs beegfs_nodev" >"$SHIM_STATE/mounts"
  shim beegfs-ctl 'exit 0'
  role "$cfg" beegfs up client
  assert_success
  conf=$ROOT/etc/beegfs/beegfs-client.conf
  grep -qx "sysMgmtdHost = mgmt0" "$conf"
  grep -qx "connMaxInternodeNum = 24" "$conf"
  grep -qx "connInterfacesFile = /etc/beegfs/client-connInterfacesFile" "$conf"
  [ "$(cat "$ROOT/etc/beegfs/beegfs-mounts.conf")" = "/mnt/beegfs /etc/beegfs/beegfs-client.conf" ]
  run calls systemctl
  assert_output "systemctl is-active beegfs-client.service
systemctl enable --now beegfs-client.service"
  run calls beegfs-ctl
  assert_output "beegfs-ctl --getentryinfo --mount=/mnt/beegfs /mnt/beegfs/benchmark
beegfs-ctl --setpattern --mount=/mnt/beegfs --chunksize=2m --numtargets=3 /mnt/beegfs/benchmark"
}

@test "client: a pattern already in place is left alone; other clients never set it" {
  echo "/mnt/beegfs beegfs beegfs_nodev" >"$SHIM_STATE/mounts"
  shim beegfs-ctl 'printf "%s\n" "Stripe pattern details:" "+ Type: RAID0" "+ Chunksize: 2M" "+ Number of storage targets: desired: 3"'
  cfg=$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)
  role "$cfg" beegfs up client
  assert_success
  run calls beegfs-ctl
  assert_output "beegfs-ctl --getentryinfo --mount=/mnt/beegfs /mnt/beegfs/benchmark"
  : >"$SHIM_LOG"
  cfg=$(node_config beegfs.json cli1 cli 1 10.10.1.2 beegfs-client)
  role "$cfg" beegfs start client
  assert_success
  [ -z "$(calls beegfs-ctl)" ]
}

@test "client of BeeGFS 7.1 also starts beegfs-helperd" {
  echo "/mnt/beegfs beegfs beegfs_nodev" >"$SHIM_STATE/mounts"
  shim beegfs-ctl
  cfg=$(node_config beegfs.json cli1 cli 1 10.10.1.2 beegfs-client)
  jq '.filesystem.beegfs.repo.version = "7.1.3"' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  role "$cfg" beegfs start client
  assert_success
  run calls systemctl
  assert_line "systemctl enable --now beegfs-helperd.service"
  assert_line "systemctl enable --now beegfs-client.service"
}

# ThinkParQ's key as the role pins it, and a fake gpg that reads "FPR <hex>" lines of a
# key file as its primary keys (gpg --with-colons --show-keys output).
BEEGFS_FPR=0683AF2B9AC5BC7D59B2D62340CE4E243CD50804
key_shims() {
  mkdir -p "$ROOT/etc"
  echo "VERSION_CODENAME=bookworm" >"$ROOT/etc/os-release"
  # The key served: $SHIM_STATE/served-key, written by each test.
  shim curl 'while (($#)); do [[ $1 == -o ]] && cp "$SHIM_STATE/served-key" "$2"; shift; done'
  shim gpg 'awk "\$1 == \"FPR\" {print \"pub:-:4096:1:0000:::::::scESC:\"; print \"fpr:::::::::\" \$2 \":\"}" "${!#}"'
  shim dpkg-query 'exit 1'
  shim apt-get
}

@test "install adds ThinkParQ's repository once its key has the pinned fingerprint, and installs the component" {
  key_shims
  echo "FPR $BEEGFS_FPR" >"$SHIM_STATE/served-key"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" beegfs install meta
  assert_success
  run calls
  # Bounded in time: a server that never answers cannot hang lab-up.
  assert_line --index 0 --regexp "^curl -fsSL --connect-timeout 20 --max-time 120 https://www.beegfs.io/release/beegfs_7.4.5/gpg/GPG-KEY-beegfs -o $ROOT/etc/apt/keyrings/beegfs.asc.[A-Za-z0-9]{6}\$"
  assert_line --index 1 --regexp "^gpg --homedir .* --batch --with-colons --show-keys $ROOT/etc/apt/keyrings/beegfs.asc.[A-Za-z0-9]{6}\$"
  assert_line "apt-get update -q"
  assert_line "apt-get install -y -q beegfs-meta beegfs-utils nvme-cli mdadm e2fsprogs jq"
  [ "$(cat "$ROOT/etc/apt/keyrings/beegfs.asc")" = "FPR $BEEGFS_FPR" ]
  [ "$(cat "$ROOT/etc/apt/sources.list.d/beegfs.list")" = "deb [arch=amd64 signed-by=/etc/apt/keyrings/beegfs.asc] https://www.beegfs.io/release/beegfs_7.4.5 bookworm non-free" ]
}

@test "install client also installs the BeeGFS client headers the toolchain's IOR +beegfs needs" {
  key_shims
  echo "FPR $BEEGFS_FPR" >"$SHIM_STATE/served-key"
  cfg=$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)
  role "$cfg" beegfs install client
  assert_success
  run calls apt-get
  assert_line "apt-get install -y -q beegfs-client beegfs-client-dev beegfs-utils jq"
}

@test "a node config without repo.version (a Packer build given no settings) installs the release the registry names" {
  key_shims
  echo "FPR $BEEGFS_FPR" >"$SHIM_STATE/served-key"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  jq 'del(.filesystem.beegfs.repo)' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  release=$(jq -r '.settings.beegfs.properties.repo.properties.version.default' "$KIT/families/beegfs/family.json")
  [[ $release == 7.* ]]
  role "$cfg" beegfs install meta
  assert_success
  [ "$(cat "$ROOT/etc/apt/sources.list.d/beegfs.list")" = "deb [arch=amd64 signed-by=/etc/apt/keyrings/beegfs.asc] https://www.beegfs.io/release/beegfs_$release bookworm non-free" ]
  # The lab's own version, when it has one, wins.
  jq '.filesystem.beegfs.repo.version = "7.3.4"' "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
  role "$cfg" beegfs install meta
  assert_success
  grep -q "beegfs_7.3.4 bookworm" "$ROOT/etc/apt/sources.list.d/beegfs.list"
}

@test "install refuses a BeeGFS key with another fingerprint: one line, no keyring, no repository, nothing installed" {
  key_shims
  echo "FPR 1111111111111111111111111111111111111111" >"$SHIM_STATE/served-key"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" beegfs install meta
  assert_failure 2
  [ "${#lines[@]}" -eq 2 ] # the fetch, then the one-line refusal
  assert_line --index 1 "[beegfs:meta@mds0] error: BeeGFS signing key from https://www.beegfs.io/release/beegfs_7.4.5/gpg/GPG-KEY-beegfs: key fingerprint mismatch: expected $BEEGFS_FPR (BEEGFS_KEY_FINGERPRINT in scripts/roles/beegfs), got 1111111111111111111111111111111111111111; not trusted"
  [ -z "$(ls -A "$ROOT/etc/apt/keyrings")" ]
  [ ! -e "$ROOT/etc/apt/sources.list.d/beegfs.list" ]
  [ -z "$(calls apt-get)" ]
}

@test "install refuses a key file carrying a second key next to the pinned one" {
  key_shims
  printf 'FPR %s\nFPR %s\n' "$BEEGFS_FPR" 2222222222222222222222222222222222222222 >"$SHIM_STATE/served-key"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" beegfs install meta
  assert_failure 2
  assert_output --partial "got $BEEGFS_FPR,2222222222222222222222222222222222222222; not trusted"
  [ ! -e "$ROOT/etc/apt/sources.list.d/beegfs.list" ]
}

@test "a keyring already in place is checked again; a lab's own key_fingerprint replaces the pin" {
  key_shims
  mkdir -p "$ROOT/etc/apt/keyrings"
  echo "FPR 3333333333333333333333333333333333333333" >"$ROOT/etc/apt/keyrings/beegfs.asc"
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" beegfs install meta
  assert_failure 2
  assert_output "[beegfs:meta@mds0] error: BeeGFS signing key $ROOT/etc/apt/keyrings/beegfs.asc: key fingerprint mismatch: expected $BEEGFS_FPR (BEEGFS_KEY_FINGERPRINT in scripts/roles/beegfs), got 3333333333333333333333333333333333333333; not trusted"
  [ -z "$(calls curl)" ]
  jq '.filesystem.beegfs.repo.key_fingerprint = "3333333333333333333333333333333333333333"' "$cfg" >"$cfg.site"
  role "$cfg.site" beegfs install meta
  assert_success
  [ -z "$(calls curl)" ]
  run calls apt-get
  assert_line "apt-get install -y -q beegfs-meta beegfs-utils nvme-cli mdadm e2fsprogs jq"
}

@test "mgmt: setup once, then the unit" {
  cfg=$(node_config beegfs.json mgmt0 mgmt 0 10.10.0.9 beegfs-mgmt)
  role "$cfg" beegfs up mgmt
  assert_success
  run calls
  assert_line "beegfs-setup-mgmtd -c $ROOT/etc/beegfs/beegfs-mgmtd.conf -p /data/beegfs/mgmtd"
  assert_line "systemctl enable --now beegfs-mgmtd.service"
  : >"$SHIM_LOG"
  role "$cfg" beegfs up mgmt
  run calls
  refute_line --partial beegfs-setup-mgmtd
  refute_line --partial "enable --now"
}

@test "health cluster counts Online/Good targets through the management host" {
  shim beegfs-ctl 'printf "%s\n" "TargetID     Reachability  Consistency   NodeID" "========     ============  ===========   ======" \
    "       1           Online         Good        1" "       2           Online         Good        2"
[[ $* == *storage* ]] && echo "       3          Offline         Good        3"; exit 0'
  cfg=$(node_config beegfs.json mgmt0 mgmt 0 10.10.0.9 beegfs-mgmt)
  role "$cfg" beegfs health cluster
  assert_failure 1
  assert_output "beegfs: 2/2 meta targets online and good, 2/3 storage targets online and good"
  assert_equal "$(calls beegfs-ctl | head -n 1)" "beegfs-ctl --sysMgmtdHost=mgmt0 --listtargets --nodetype=meta --state"
}

@test "bad action or component: one line, exit 2" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta)
  role "$cfg" beegfs configure frobnicator
  assert_failure 2
  assert_output "[beegfs:frobnicator@mds0] error: component 'frobnicator' is not one of mgmt, meta, storage, client, mon, cluster (usage: beegfs ACTION COMPONENT)"
  role "$cfg" beegfs explode meta
  assert_failure 2
  assert_output "[beegfs:meta@mds0] error: action 'explode' is not one of install, configure, start, up, stop, health"
}

@test "connection authentication: the first mgmt node makes the secret (400, random, never printed); every config names it" {
  rm -f "$AUTH"
  cfg=$(node_config beegfs.json mgmt0 mgmt 0 10.10.0.9 beegfs-mgmt)
  role "$cfg" beegfs up mgmt
  assert_success
  [ "$(stat -c %a "$AUTH")" = 400 ]
  [ "$(stat -c %a "$(dirname "$AUTH")")" = 700 ]
  secret=$(cat "$AUTH")
  [ "${#secret}" -eq 64 ]
  # Neither the role's output nor any command line it ran holds the secret.
  refute_output --partial "$secret"
  run grep -cF -- "$secret" "$SHIM_LOG"
  assert_output 0
  grep -qx "connAuthFile = /etc/pfslab/cluster/beegfs.auth" "$ROOT/etc/beegfs/beegfs-mgmtd.conf"
  # Made once: a second run keeps it; another mgmt node never makes one.
  role "$cfg" beegfs up mgmt
  assert_success
  [ "$(cat "$AUTH")" = "$secret" ]
  rm -f "$AUTH"
  cfg=$(node_config beegfs.json mgmt1 mgmt 1 10.10.0.10 beegfs-mgmt)
  role "$cfg" beegfs configure mgmt
  assert_success
  [ ! -e "$AUTH" ]
  : >"$SHIM_LOG"
  # Without it no service starts: one line naming where it comes from.
  role "$cfg" beegfs start mgmt
  assert_failure 2
  assert_output "[beegfs:mgmt@mgmt1] error: /etc/pfslab/cluster/beegfs.auth is missing on mgmt1: the first management node (mgmt0) makes it and the bring-up copies it (scripts/lib/cluster-files.sh); with an external mgmt_host, put that cluster's connAuthFile there"
  [ -z "$(calls systemctl | grep enable)" ]
}

@test "connection authentication: every meta, storage, mon, client and helperd config names connAuthFile" {
  cfg=$(node_config beegfs.json mds0 mds 0 10.10.0.1 beegfs-meta beegfs-storage)
  role "$cfg" beegfs configure meta
  assert_success
  role "$cfg" beegfs configure storage
  assert_success
  cfg=$(node_config beegfs.json mon0 mon 0 10.10.0.8 beegfs-mon)
  role "$cfg" beegfs configure mon
  assert_success
  printf '%s\n' "connAuthFile =" >"$ROOT/etc/beegfs/beegfs-helperd.conf"
  cfg=$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)
  role "$cfg" beegfs configure client
  assert_success
  confs=$(find "$ROOT/etc/beegfs" -name 'beegfs-*.conf' ! -name beegfs-mounts.conf ! -name beegfs-mgmtd.conf ! -path "$ROOT/etc/beegfs/beegfs-meta.conf" ! -path "$ROOT/etc/beegfs/beegfs-storage.conf" | sort)
  # 6 meta and 3 storage instances, mon, client, helperd.
  [ "$(wc -l <<<"$confs")" -eq 12 ]
  for conf in $confs; do
    grep -qx "connAuthFile = /etc/pfslab/cluster/beegfs.auth" "$conf" || { echo "no connAuthFile in $conf"; false; }
  done
  # A config keeps the package's mode (the role's umask 077 does not hide it).
  [ "$(stat -c %a "$ROOT/etc/beegfs/beegfs-client.conf")" = 644 ]
  [ "$(stat -c %a "$ROOT/etc/beegfs/meta0.d/beegfs-meta.conf")" = 644 ]
  [ "$(stat -c %a "$ROOT/mnt/beegfs")" = 755 ]
  run grep -rlF given-secret "$ROOT/etc/beegfs" "$SHIM_LOG"
  assert_output ""
}

@test "connection authentication: a lab's connDisableAuthentication or connAuthFile, or a value that adds a line, is refused in one line" {
  cfg=$(node_config beegfs.json cli0 cli 0 10.10.1.1 beegfs-client)
  jq '.filesystem.beegfs.client.connDisableAuthentication = true' "$cfg" >"$cfg.off"
  role "$cfg.off" beegfs configure client
  assert_failure 2
  assert_line "[beegfs:client@cli0] error: filesystem.beegfs.client.connDisableAuthentication: true is not allowed: the kit's connAuthFile (/etc/pfslab/cluster/beegfs.auth) authenticates every BeeGFS connection; allowed: any other BeeGFS setting"
  run grep -c connDisableAuthentication "$ROOT/etc/beegfs/beegfs-client.conf"
  assert_output 0
  jq '.filesystem.beegfs.client.connAuthFile = "/tmp/open"' "$cfg" >"$cfg.file"
  role "$cfg.file" beegfs configure client
  assert_failure 2
  assert_output --partial "error: filesystem.beegfs.client.connAuthFile: /tmp/open is not allowed"
  refute grep -q /tmp/open "$ROOT/etc/beegfs/beegfs-client.conf"
  jq '.filesystem.beegfs.client.tuneNumWorkers = "8\nconnDisableAuthentication = true"' "$cfg" >"$cfg.nl"
  role "$cfg.nl" beegfs configure client
  assert_failure 2
  assert_line "[beegfs:client@cli0] error: filesystem.beegfs.client: 'tuneNumWorkers = 8\\nconnDisableAuthentication = true' is not allowed; allowed: a BeeGFS setting name (letters and digits) with a one-line value"
  run grep -c connDisableAuthentication "$ROOT/etc/beegfs/beegfs-client.conf"
  assert_output 0
  # false says what the kit does anyway.
  jq '.filesystem.beegfs.client.connDisableAuthentication = false' "$cfg" >"$cfg.on"
  role "$cfg.on" beegfs configure client
  assert_success
  grep -qx "connAuthFile = /etc/pfslab/cluster/beegfs.auth" "$ROOT/etc/beegfs/beegfs-client.conf"
}
