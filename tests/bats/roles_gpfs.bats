#!/usr/bin/env bats
# shellcheck disable=SC2016
# The GPFS role against command shims (seeds 000/004, PixStor: 8 MiB blocks split into
# 256 subblocks of 32 KiB, which GPFS 5.x gives beside 2 MiB metadata blocks, scatter
# allocation, pagepool 16 GiB). GPFS is licensed: nothing here runs it, and the role
# must refuse when the user's installer is absent.

load helpers

setup() {
  sandbox
  common_shims
  shim ssh
  shim uname 'echo 6.1.0-test-amd64'
  # GPFS state: $SHIM_STATE/cluster once mmcrcluster ran, $SHIM_STATE/fs once mmcrfs ran.
  shim mmlscluster '[[ -e $SHIM_STATE/cluster ]]'
  shim mmcrcluster ': >"$SHIM_STATE/cluster"'
  shim mmchlicense
  shim mmchconfig
  shim mmcrnsd
  shim mmlsnsd 'if [[ $1 == -F ]]; then printf "%s\n" "" " File system   Disk name    NSD servers" "---------------------------------------------------------------------------" \
    " (free disk)   nsd0_data0   nsd0" " (free disk)   nsd0_meta0   nsd0" " (free disk)   nsd1_data0   nsd1"; fi; exit 0'
  shim mmlsfs '[[ -e $SHIM_STATE/fs ]]'
  shim mmcrfs ': >"$SHIM_STATE/fs"'
  shim mmchpolicy
  shim mmgetstate 'echo " Node number  Node name        GPFS state"; echo "       1      ${2:-mgr0}           active"'
  shim mmstartup
  shim mmmount
  mkdir -p "$ROOT/dev/mapper"
  : >"$ROOT/dev/mapper/data0"
  : >"$ROOT/dev/mapper/meta0"
}

teardown() {
  local dev
  for dev in ${LOOPS[@]+"${LOOPS[@]}"}; do
    pvremove -y "$dev" >/dev/null 2>&1 || true
    losetup -d "$dev" 2>/dev/null || true
  done
}

@test "install refuses with one line when the lab names no installer or it is not on the node" {
  cfg=$(node_config gpfs.json mgr0 mgr 0 10.20.0.1 gpfs-manager)
  role "$cfg" gpfs install manager
  assert_failure 2
  assert_output "[gpfs:manager@mgr0] error: GPFS installer /root/Spectrum_Scale_Data_Management-5.0.4.2-x86_64-Linux-install is not on this node; GPFS is licensed, so bring IBM's installer (it is never downloaded)"
  jq 'del(.filesystem.gpfs.installer)' "$cfg" >"$cfg.none"
  role "$cfg.none" gpfs install manager
  assert_failure 2
  assert_output "[gpfs:manager@mgr0] error: filesystem.gpfs.installer is not set; GPFS is licensed: copy IBM's installer to the node and give its path"
  [ -z "$(calls)" ]
}

@test "install runs the user's installer, installs its packages and builds the portability layer" {
  cfg=$(node_config gpfs.json mgr0 mgr 0 10.20.0.1 gpfs-manager)
  mkdir -p "$ROOT/root"
  cat >"$ROOT/root/Spectrum_Scale_Data_Management-5.0.4.2-x86_64-Linux-install" <<'EOF'
#!/bin/bash
echo "installer $*" >>"$SHIM_LOG"
d=$PFSLAB_SYSROOT/usr/lpp/mmfs/5.0.4.2/gpfs_debs
mkdir -p "$d"
for p in gpfs.base_5.0.4-2 gpfs.gpl_5.0.4-2 gpfs.gskit_8.0.50-86 gpfs.msg.en-us_5.0.4-2 gpfs.docs_5.0.4-2; do : >"$d/${p}_amd64.deb"; done
EOF
  shim dpkg-query 'exit 1'
  shim apt-get
  shim dpkg
  shim mmbuildgpl
  role "$cfg" gpfs install manager
  assert_success
  d=$ROOT/usr/lpp/mmfs/5.0.4.2/gpfs_debs
  run calls
  assert_line --index 0 "installer --silent"
  assert_line "apt-get install -y -q build-essential linux-headers-6.1.0-test-amd64 ksh"
  assert_line "dpkg -i $d/gpfs.base_5.0.4-2_amd64.deb $d/gpfs.gpl_5.0.4-2_amd64.deb $d/gpfs.gskit_8.0.50-86_amd64.deb $d/gpfs.docs_5.0.4-2_amd64.deb"
  assert_line "mmbuildgpl"
}

@test "manager: mmcrcluster once, then pagepool and the lab's config in one mmchconfig" {
  cfg=$(node_config gpfs.json mgr0 mgr 0 10.20.0.1 gpfs-manager)
  role "$cfg" gpfs up manager
  assert_success
  run calls
  assert_line --index 1 "mmcrcluster -N mgr0:quorum-manager -C pixstor-capex -r /usr/bin/ssh -R /usr/bin/scp -A"
  assert_line --index 2 "mmchlicense server --accept -N mgr0"
  assert_line --index 3 "mmchconfig pagepool=16G,maxMBpS=20000"
  : >"$SHIM_LOG"
  role "$cfg" gpfs configure manager
  run calls
  refute_line --partial mmcrcluster
}

@test "nsd: joins through the manager over ssh and creates its NSDs from the lab's list" {
  cfg=$(node_config gpfs.json nsd0 nsd 0 10.20.0.2 gpfs-nsd)
  role "$cfg" gpfs configure nsd
  assert_success
  run calls
  assert_line --index 1 "ssh -n -o BatchMode=yes mgr0 /usr/lpp/mmfs/bin/mmaddnode -N nsd0"
  assert_line --index 2 "ssh -n -o BatchMode=yes mgr0 /usr/lpp/mmfs/bin/mmchlicense server --accept -N nsd0"
  stanza=$BATS_TEST_TMPDIR/node/nsd0/state/gpfs-nsd.stanza
  assert_line "mmcrnsd -F $stanza"
  assert_equal "$(cat "$stanza")" "%nsd: device=/dev/mapper/data0 nsd=nsd0_data0 servers=nsd0 usage=dataOnly failureGroup=1 pool=data
%nsd: device=/dev/mapper/meta0 nsd=nsd0_meta0 servers=nsd0 usage=metadataOnly failureGroup=1 pool=system"
}

@test "first client: mmcrfs with the seed's block size, metadata block size, scatter, then mmmount" {
  cfg=$(node_config gpfs.json cli0 cli 0 10.20.1.1 gpfs-client)
  : >"$SHIM_STATE/cluster"
  role "$cfg" gpfs up client
  assert_success
  stanza=$BATS_TEST_TMPDIR/node/cli0/state/gpfs-fs.stanza
  assert_equal "$(calls mmcrfs)" "mmcrfs mmfs1 -F $stanza -B 8M --metadata-block-size 2M -j scatter -i 4096 -T /mmfs1 -A yes"
  assert_equal "$(calls mmmount)" "mmmount mmfs1"
  assert_equal "$(cat "$stanza")" "%nsd: nsd=nsd0_data0 usage=dataOnly failureGroup=1 pool=data
%nsd: nsd=nsd0_meta0 usage=metadataOnly failureGroup=1 pool=system
%nsd: nsd=nsd1_data0 usage=dataOnly failureGroup=2 pool=data"
  # The system pool holds metadata only: new files' data goes to the data pool.
  policy=$BATS_TEST_TMPDIR/node/cli0/state/gpfs-placement.pol
  assert_equal "$(calls mmchpolicy)" "mmchpolicy mmfs1 $policy"
  assert_equal "$(cat "$policy")" "RULE 'default' SET POOL 'data'"
  # Other clients wait for the file system and only mount it.
  : >"$SHIM_LOG"
  cfg=$(node_config gpfs.json cli1 cli 1 10.20.1.2 gpfs-client)
  role "$cfg" gpfs start client
  assert_success
  [ -z "$(calls mmcrfs)" ]
  assert_equal "$(calls mmmount)" "mmmount mmfs1"
}

@test "a subblock count GPFS 5.x would not give those block sizes is refused before mmcrfs" {
  cfg=$(node_config gpfs.json cli0 cli 0 10.20.1.1 gpfs-client)
  : >"$SHIM_STATE/cluster"
  # 8M alone: 512 subblocks of 16 KiB, not the seed's 256 of 32 KiB.
  jq 'del(.filesystem.gpfs.metadata_block_size) | .filesystem.gpfs.nsds[1].usage = "dataAndMetadata"' "$cfg" >"$cfg.8m"
  role "$cfg.8m" gpfs start client
  assert_failure 2
  assert_output --partial "error: filesystem.gpfs.subblocks_per_block is 256, but GPFS 5.x gives a 8M block 512 subblocks of 16 KiB (every pool has the count of the smallest block size); allowed: 512, or block sizes that give 256"
  # Beside 1M metadata blocks: 128 of 64 KiB.
  jq '.filesystem.gpfs.metadata_block_size = "1M"' "$cfg" >"$cfg.1m"
  role "$cfg.1m" gpfs start client
  assert_failure 2
  assert_output --partial "error: filesystem.gpfs.subblocks_per_block is 256, but GPFS 5.x gives a 8M block beside 1M metadata blocks 128 subblocks of 64 KiB"
  jq '.filesystem.gpfs.block_size = "3M"' "$cfg" >"$cfg.3m"
  role "$cfg.3m" gpfs start client
  assert_failure 2
  assert_output --partial "error: filesystem.gpfs.block_size 3M is not a GPFS block size; allowed: 64K, 128K, 256K, 512K, 1M, 2M, 4M, 8M, 16M"
  # A metadata block size of its own with data NSDs in the system pool: mmcrfs would refuse it.
  jq '.filesystem.gpfs.nsds[1].usage = "dataAndMetadata"' "$cfg" >"$cfg.mixed"
  role "$cfg.mixed" gpfs start client
  assert_failure 2
  assert_output --partial "error: filesystem.gpfs.metadata_block_size needs the system pool to hold metadataOnly NSDs only; nsds /dev/mapper/meta0 are in system with data"
  [ -z "$(calls mmcrfs)" ]
  # 8M alone with the count it gives is accepted.
  jq '.filesystem.gpfs.subblocks_per_block = 512' "$cfg.8m" >"$cfg.512"
  role "$cfg.512" gpfs start client
  assert_success
  assert_equal "$(calls mmcrfs | grep -c -- '-B 8M')" 1
  [ -z "$(calls mmchpolicy)" ]
}

@test "the shipped pixstor-capex lab's block sizes give the seed's 256 subblocks of 32 KiB" {
  [[ -x $KIT/.venv/bin/pfslab ]] || skip "the kit's Python environment is missing: run 'make deps'"
  cfg=$(node_config gpfs.json cli0 cli 0 10.20.1.1 gpfs-client)
  "$KIT/.venv/bin/pfslab" lab show pixstor-capex | jq '.filesystem.gpfs' >"$BATS_TEST_TMPDIR/lab-gpfs.json"
  # The lab's GPFS settings over the fixture's site parts (installer, NSDs, which the lab leaves to a site).
  jq --slurpfile lab "$BATS_TEST_TMPDIR/lab-gpfs.json" '.filesystem.gpfs = (.filesystem.gpfs | {installer, nsds}) + $lab[0]' "$cfg" >"$cfg.lab"
  [ "$(jq -r '.filesystem.gpfs.subblocks_per_block' "$cfg.lab")" = 256 ]
  : >"$SHIM_STATE/cluster"
  role "$cfg.lab" gpfs start client
  assert_success
  assert_equal "$(calls mmcrfs | grep -o -- '-B [^ ]* --metadata-block-size [^ ]*')" "-B 8M --metadata-block-size 2M"
}

mmlsfs_output() {
  shim mmlsfs "printf '%s\n' 'flag                value                    description' \
'------------------- ------------------------ -----------------------------------' \
' -f                 8192                     Minimum fragment (subblock) size in bytes (system pool)' \
'                    $1                    Minimum fragment (subblock) size in bytes (other pools)' \
' -B                 2097152                  Block size (system pool)' \
'                    8388608                  Block size (other pools)' \
' -j                 scatter                  Block allocation type'"
}

@test "health cluster: block size, 256 subblocks of 32 KiB, scatter and pagepool as the lab says" {
  cfg=$(node_config gpfs.json mgr0 mgr 0 10.20.0.1 gpfs-manager)
  shim mmgetstate 'printf "%s\n" " Node number  Node name        GPFS state" "       1      mgr0             active" "       2      nsd0             active"'
  shim mmlsconfig 'echo "pagepool 16G"'
  mmlsfs_output 32768
  role "$cfg" gpfs health cluster
  assert_success
  assert_output "gpfs: every node active; mmfs1: block 8388608, 256 subblocks, scatter allocation, pagepool 16G"
  assert_equal "$(calls mmlsfs)" "mmlsfs mmfs1 -B -f -j"
  mmlsfs_output 16384
  shim mmgetstate 'printf "%s\n" " Node number  Node name        GPFS state" "       1      mgr0             active" "       2      nsd0             down"'
  shim mmlsconfig 'echo "pagepool 1G"'
  role "$cfg" gpfs health cluster
  assert_failure 1
  assert_output "gpfs: nodes not active: nsd0=down 512 subblocks of 16 KiB (lab: 256) pagepool 1G (lab: 16G)"
}

@test "bad action or component: one line, exit 2" {
  cfg=$(node_config gpfs.json mgr0 mgr 0 10.20.0.1 gpfs-manager)
  role "$cfg" gpfs configure protocol
  assert_failure 2
  assert_output "[gpfs:protocol@mgr0] error: component 'protocol' is not one of manager, nsd, client, cluster (usage: gpfs ACTION COMPONENT)"
  role "$cfg" gpfs restart manager
  assert_failure 2
  assert_output "[gpfs:manager@mgr0] error: action 'restart' is not one of install, configure, start, up, stop, health"
}

# GPFS is not installable here, so mmcrnsd is a shim; the devices are real loop devices,
# probed by the real lsblk and wipefs, as tests/bats/device_safety.bats does.
@test "nsd: a device that carries a file system or an LVM label is refused before mmcrnsd; a listed or blank one is used" {
  [[ $(id -u) -eq 0 ]] || skip "needs root for loop devices"
  command -v losetup >/dev/null || skip "losetup (util-linux) is missing"
  local t dev img kinds=(ext4) before
  command -v pvcreate >/dev/null && kinds+=(LVM2_member)
  for t in lsblk wipefs comm swapon; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  LOOPS=()
  for t in "${kinds[@]}"; do
    img=$BATS_TEST_TMPDIR/disk-$t
    truncate -s 64M "$img"
    dev=$(losetup -f --show "$img")
    LOOPS+=("$dev")
    if [[ $t == ext4 ]]; then mkfs.ext4 -q "$dev"; else pvcreate -y -q "$dev" >/dev/null 2>&1 || skip "pvcreate cannot label a loop device here"; fi
    # The role reads devices through its scratch root: there, the real one.
    mkdir -p "$ROOT/dev"
    ln -sf "$dev" "$ROOT$dev"
    cfg=$(node_config gpfs.json nsd0 nsd 0 10.20.0.2 gpfs-nsd)
    jq --arg d "$dev" '.filesystem.gpfs.nsds = [{device: $d, usage: "dataAndMetadata", pool: "system"}]' "$cfg" >"$cfg.loop"
    before=$(sha256sum <"$dev")
    : >"$SHIM_LOG"
    role "$cfg.loop" gpfs configure nsd
    assert_failure 2
    assert_output --partial "error: $dev holds signatures ($t); refusing to make it GPFS NSD nsd0_${dev##*/}"
    [ -z "$(calls mmcrnsd)" ]
    assert_equal "$(sha256sum <"$dev")" "$before"
    # Listed in the node group's wipe_devices: the lab gave it, mmcrnsd may have it.
    jq --arg d "$dev" '.wipe_devices = [$d]' "$cfg.loop" >"$cfg.wipe"
    role "$cfg.wipe" gpfs configure nsd
    assert_success
    assert_equal "$(calls mmcrnsd | wc -l)" 1
  done
  # A blank device is used without a word about it.
  img=$BATS_TEST_TMPDIR/disk-blank
  truncate -s 64M "$img"
  dev=$(losetup -f --show "$img")
  LOOPS+=("$dev")
  ln -sf "$dev" "$ROOT$dev"
  jq --arg d "$dev" '.filesystem.gpfs.nsds = [{device: $d}]' "$cfg" >"$cfg.blank"
  : >"$SHIM_LOG"
  role "$cfg.blank" gpfs configure nsd
  assert_success
  assert_equal "$(calls mmcrnsd | wc -l)" 1
}
