#!/usr/bin/env bats
# shellcheck disable=SC2016
# The Packer templates and the image scripts, offline: `packer validate` (full, not
# -syntax-only) of every build on every builder with Debian's Packer 1.6.6 and no cloud
# credentials, `packer fmt -check`, the variables' validation rules, bad input of
# scripts/images and scripts/image-boot-test (one line, exit 2, nothing built or
# booted), and the image digest. The real qemu build and boot: tests/images/qemu.bats.

load helpers

setup() {
  sandbox
  DUMMY=$BATS_TEST_TMPDIR/dummy
  mkdir -p "$DUMMY/seed"
}

# The template directory Packer gets, assembled as scripts/images does (packer_templates:
# packer/ less plugins.pkr.hcl, every targets/*/image.pkr.hcl, the build's sources).
templates() {
  local dir=$BATS_TEST_TMPDIR/templates
  [[ -d $dir ]] || (cd "$KIT" && source scripts/lib/common.sh && source scripts/lib/images.sh && packer_templates "$dir")
  echo "$dir"
}

# Variables for validate: the kit's and, for the qemu builder, stand-in files (Packer
# checks that they exist and that the key parses).
dummy_vars() {
  : >"$DUMMY/kit.tar.gz"
  : >"$DUMMY/base.qcow2"
  : >"$DUMMY/vmlinuz"
  : >"$DUMMY/initrd"
  : >"$DUMMY/seed/user-data"
  : >"$DUMMY/seed/meta-data"
  [[ -s $DUMMY/seed/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$DUMMY/seed/id_ed25519"
  VARS=(-var "kit_root=$KIT" -var "kit_archive=$DUMMY/kit.tar.gz"
    -var "image_digest=$(printf '%064d' 0 | tr 0 a)"
    -var "qemu_base_image=$DUMMY/base.qcow2"
    -var "qemu_base_checksum=sha256:$(sha256sum <"$DUMMY/base.qcow2" | cut -d' ' -f1)"
    -var "qemu_kernel=$DUMMY/vmlinuz" -var "qemu_initrd=$DUMMY/initrd"
    -var "qemu_seed_dir=$DUMMY/seed" -var "qemu_ssh_private_key_file=$DUMMY/seed/id_ed25519")
}

need_packer() {
  command -v packer >/dev/null || skip "packer is not installed (make deps installs Debian's packer)"
}

# Packer with no cloud credentials in reach: validate must not need any.
packer_offline() {
  run /usr/bin/env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE -u ARM_CLIENT_ID \
    -u ARM_CLIENT_SECRET -u ARM_TENANT_ID -u ARM_SUBSCRIPTION_ID HOME="$BATS_TEST_TMPDIR" \
    PACKER_CACHE_DIR="$BATS_TEST_TMPDIR/packer_cache" packer "$@"
}

# The sources of the build "image", as packer inspect lists them: validate passes an
# empty build (or an -only naming no source) without checking anything.
assert_build_sources() {
  packer_offline inspect "${VARS[@]}" -var role=server "$(templates)"
  assert_success
  run sed -n '/^  > image:/,/^    provisioners:/{s/^      \([a-z].*\)$/\1/p}' <<<"$output"
  assert_output "amazon-ebs.debian
azure-arm.hpc
qemu.debian"
}

@test "packer validate: the build on every builder, for each role (server, client x amazon-ebs, azure-arm, qemu)" {
  need_packer
  dummy_vars
  assert_build_sources
  local role
  for role in server client; do
    packer_offline validate "${VARS[@]}" -var "role=$role" "$(templates)"
    [[ $status -eq 0 && $output != *Error* ]] || fail "packer validate -var role=$role: $output"
  done
}

@test "packer validate: each builder alone, without cloud credentials" {
  need_packer
  dummy_vars
  assert_build_sources
  local only role
  for role in server client; do
    for only in image.amazon-ebs.debian image.azure-arm.hpc image.qemu.debian; do
      packer_offline validate -only="$only" "${VARS[@]}" -var "role=$role" "$(templates)"
      [[ $status -eq 0 ]] || fail "packer validate -only=$only -var role=$role: $output"
    done
  done
}

@test "packer validate: the qemu builder refuses a missing base image (not only syntax)" {
  need_packer
  dummy_vars
  rm "$DUMMY/seed/user-data"
  packer_offline validate -only=image.qemu.debian "${VARS[@]}" -var role=server "$(templates)"
  assert_failure
  assert_output --partial "seed/user-data"
}

@test "packer validate: the variables' rules reject a bad role, family, digest, fabric or JSON" {
  need_packer
  dummy_vars
  packer_offline validate "${VARS[@]}" -var role=admin "$(templates)"
  assert_failure
  assert_output --partial "The role must be server or client."
  packer_offline validate "${VARS[@]}" -var role=server -var family=lustre "$(templates)"
  assert_failure
  # Packer wraps the message at 80 columns: compare it with the line breaks undone.
  run tr -s ' \n' ' ' <<<"$output"
  assert_output --partial "family 'lustre' is not one of beegfs, ceph, gpfs, nfs (families/*/family.json)"
  packer_offline validate "${VARS[@]}" -var role=server -var family=Ceph "$(templates)"
  assert_failure
  assert_output --partial "The family must be a family name of families/*/family.json"
  packer_offline validate "${VARS[@]}" -var role=server -var image_digest=0123abc "$(templates)"
  assert_failure
  assert_output --partial "64 lower-case hex digits"
  packer_offline validate "${VARS[@]}" -var role=server -var 'fabric={"qemu":"wifi","amazon-ebs":"efa","azure-arm":"none"}' "$(templates)"
  assert_failure
  assert_output --partial "Each fabric must be one of"
  packer_offline validate "${VARS[@]}" -var role=server -var 'filesystem_settings=[1,2]' "$(templates)"
  assert_failure
  assert_output --partial "must be a JSON object"
  packer_offline validate "${VARS[@]}" -var role=server -var toolchain=maybe "$(templates)"
  assert_failure
  assert_output --partial "The toolchain must be auto, on, off or distro."
}

@test "packer 1.6.6 rejects plugins.pkr.hcl: that is why it lives alone and scripts/images leaves it out" {
  need_packer
  [[ $(packer version) == "Packer v1.6."* ]] || skip "not Debian's packer 1.6.x ($(packer version | head -n 1))"
  dummy_vars
  local dir
  dir=$(templates)
  ln -s "$KIT/packer/plugins.pkr.hcl" "$dir/"
  packer_offline validate "${VARS[@]}" -var role=server "$dir"
  assert_failure
  assert_output --partial required_plugins
  run grep -c 'version = "= [0-9]' "$KIT/packer/plugins.pkr.hcl"
  assert_output 3
}

@test "packer fmt -check: every template is formatted" {
  need_packer
  local f
  for f in "$KIT"/packer/*.pkr.hcl "$KIT"/targets/*/image.pkr.hcl; do
    run packer fmt -check "$f"
    assert_success
    assert_output ""
  done
}

@test "the qemu build's shutdown removes the build account and its sudo rule (run in a private /etc)" {
  [[ $(id -u) -eq 0 ]] || skip "needs root for a private mount namespace"
  command -v useradd >/dev/null || skip "needs useradd (passwd)"
  # The root part of the command: what Packer's `sudo sh -c '...'` runs.
  inner=$(sed -n "s/^ *shutdown_command *= *\"sudo sh -c '\(.*\)'\"$/\1/p" "$KIT/targets/baremetal/image.pkr.hcl")
  [[ -n $inner ]] || fail "no sudo sh -c shutdown_command in targets/baremetal/image.pkr.hcl"
  printf '%s\n' "$inner" >"$BATS_TEST_TMPDIR/inner.sh"
  # Copies of /etc and /home in a mount namespace: the real ones are never touched;
  # shutdown is a shim that records its arguments.
  mkdir -p "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/home"
  printf '#!/bin/sh\necho "shutdown $*" >"%s/shutdown.log"\n' "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/bin/shutdown"
  chmod +x "$BATS_TEST_TMPDIR/bin/shutdown"
  T=$BATS_TEST_TMPDIR run unshare -m bash -euc '
    cp -a /etc "$T/etc" && mount --bind "$T/etc" /etc && mount --bind "$T/home" /home
    useradd --create-home pfslab-build
    echo "pfslab-build ALL=(ALL) NOPASSWD:ALL" >/etc/sudoers.d/90-cloud-init-users
    PATH="$T/bin:$PATH" sh "$T/inner.sh"
    if getent passwd pfslab-build; then echo "account left"; fi
    if [ -e /etc/sudoers.d/90-cloud-init-users ]; then echo "sudo rule left"; fi
    if [ -d /home/pfslab-build ]; then echo "home left"; fi'
  assert_success
  refute_output --partial "left"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/shutdown.log")" "shutdown -P now"
  run getent passwd pfslab-build
  assert_failure
}

# ---- the assembly: targets' image.pkr.hcl ---------------------------------------------------

# packer_templates in a copy of packer/ and targets/ (KIT untouched), its status and output.
assemble() {
  run bash -c "PFSLAB_ROOT='$K'; source '$KIT/scripts/lib/common.sh'; source '$KIT/scripts/lib/images.sh'; packer_templates '$BATS_TEST_TMPDIR/out'"
}

copy_kit() {
  K=$BATS_TEST_TMPDIR/kit
  mkdir -p "$K/targets"
  cp -r "$KIT/packer" "$K/"
  cp -r "$KIT"/targets/{aws,azure,baremetal,local} "$K/targets/"
}

@test "packer templates: each target's source joins the build, its folder is its images' target; a target without image.pkr.hcl adds none" {
  copy_kit
  assemble
  assert_success
  run grep '^  sources =' "$BATS_TEST_TMPDIR/out/builds.pkr.hcl"
  assert_output '  sources = ["source.amazon-ebs.debian", "source.azure-arm.hpc", "source.qemu.debian"]'
  run grep -c '^    "qemu" = "baremetal"$' "$BATS_TEST_TMPDIR/out/targets.pkr.hcl"
  assert_output 1
  # The qemu image is baremetal's: without that folder, no qemu source and nothing else lost.
  rm -rf "$K/targets/baremetal" "$BATS_TEST_TMPDIR/out"
  assemble
  assert_success
  run grep '^  sources =' "$BATS_TEST_TMPDIR/out/builds.pkr.hcl"
  assert_output '  sources = ["source.amazon-ebs.debian", "source.azure-arm.hpc"]'
  [[ ! -e $BATS_TEST_TMPDIR/out/target-local.pkr.hcl ]]
}

@test "packer templates: an image.pkr.hcl without one source, without its facts or on a taken builder is one line, exit 2" {
  copy_kit
  printf 'locals {\n  target_local = {}\n}\n' >"$K/targets/local/image.pkr.hcl"
  assemble
  assert_failure 2
  assert_output '[pfslab] error: targets/local/image.pkr.hcl must hold exactly one source block (source "TYPE" "NAME" {)'
  printf 'source "null" "a" {\n}\nsource "null" "b" {\n}\n' >"$K/targets/local/image.pkr.hcl"
  rm -rf "$BATS_TEST_TMPDIR/out"
  assemble
  assert_failure 2
  assert_output --partial "targets/local/image.pkr.hcl must hold exactly one source block"
  printf 'source "null" "a" {\n}\n' >"$K/targets/local/image.pkr.hcl"
  rm -rf "$BATS_TEST_TMPDIR/out"
  assemble
  assert_failure 2
  assert_output "[pfslab] error: targets/local/image.pkr.hcl has no 'locals { target_local = { fabric = ..., toolchain_auto = ... } }' (what the shared build steps take from it)"
  printf 'source "qemu" "other" {\n}\nlocals {\n  target_local = {}\n}\n' >"$K/targets/local/image.pkr.hcl"
  rm -rf "$BATS_TEST_TMPDIR/out"
  assemble
  assert_failure 2
  assert_output "[pfslab] error: targets/local/image.pkr.hcl: builder qemu is already another target's (local.target is keyed by builder type)"
}

@test "packer templates: an adapter's target_packer_source is the source of its own folder's image.pkr.hcl" {
  local adapter target named found n=0
  for adapter in "$KIT"/targets/*/adapter.sh; do
    grep -q '^target_packer_source()' "$adapter" || continue
    target=$(basename "$(dirname "$adapter")")
    named=$(bash -c "source '$adapter'; target_packer_source")
    found=$(sed -n 's/^source "\([^"]*\)" "\([^"]*\)" {$/\1.\2/p' "$KIT/targets/$target/image.pkr.hcl")
    assert_equal "$named" "$found"
    n=$((n + 1))
  done
  assert_equal "$n" 2
}

# ---- scripts/images: bad input --------------------------------------------------------------

images() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" HOME="$BATS_TEST_TMPDIR/home" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" \
    PFSLAB_IMAGES_DIR="$BATS_TEST_TMPDIR/images" ${IMAGES_ENV[@]+"${IMAGES_ENV[@]}"} "$KIT/scripts/images" "$@"
}

# Nothing built or started: no packer, qemu or mmdebstrap call, no file under images/.
assert_nothing_built() {
  run calls
  assert_output ""
  [[ ! -e $BATS_TEST_TMPDIR/images ]] || fail "scripts/images wrote $(ls -A "$BATS_TEST_TMPDIR/images")"
}

image_shims() {
  local t
  for t in packer mmdebstrap qemu-system-x86_64 qemu-img ssh-keygen; do shim "$t"; done
  mkdir -p "$BATS_TEST_TMPDIR/home"
}

@test "scripts/images: an unknown TARGET, ROLE or FAMILY is one line and exit 2, nothing built" {
  image_shims
  images gcp server
  assert_failure 2
  assert_output "[images] error: unknown TARGET 'gcp': one of qemu, aws, azure (usage: scripts/images qemu|aws|azure [server|client|all])"
  images qemu storage
  assert_failure 2
  assert_output "[images] error: unknown ROLE 'storage': one of server, client, all (usage: scripts/images qemu|aws|azure [server|client|all])"
  images
  assert_failure 2
  assert_output --partial "no TARGET given"
  IMAGES_ENV=(FAMILY=lustre)
  images qemu server
  assert_failure 2
  assert_output "[images] error: unknown FAMILY 'lustre': one of beegfs, ceph, gpfs, nfs (families/*/family.json)"
  IMAGES_ENV=(TOOLCHAIN=sometimes)
  images aws client
  assert_failure 2
  assert_output "[images] error: TOOLCHAIN='sometimes' is not auto, on or off"
  assert_nothing_built
}

@test "scripts/images aws without credentials: one line, exit 2, nothing started" {
  image_shims
  images aws server
  assert_failure 2
  assert_output "[images] error: scripts/images aws needs AWS credentials (none found: set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure'); nothing was built"
  assert_nothing_built
}

# STS on this machine (tests/bats/fixtures/fake-sts.py): credentials that work, offline.
# Its URL goes to FAKE_STS_URL; teardown ends it.
start_fake_sts() {
  local url=$BATS_TEST_TMPDIR/sts.url
  python3 "$BATS_TEST_DIRNAME/fixtures/fake-sts.py" >"$url" 2>/dev/null 3>&- &
  FAKE_STS_PID=$!
  timeout 10 bash -c "until [[ -s '$url' ]]; do sleep 0.1; done"
  FAKE_STS_URL=$(<"$url")
}

teardown() {
  [[ -z ${FAKE_STS_PID:-} ]] || kill "$FAKE_STS_PID" 2>/dev/null || true
}

@test "scripts/images aws when STS cannot confirm the credentials: one line naming why, exit 2" {
  image_shims
  # Nothing answers on this port: the check says so instead of building.
  IMAGES_ENV=(AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=wrong AWS_EC2_METADATA_DISABLED=true PFSLAB_AWS_ENDPOINT=http://127.0.0.1:9)
  images aws all
  assert_failure 2
  assert_output --regexp "^\[images\] error: scripts/images aws: AWS credentials were found but do not work \(checking the AWS credentials: AWS could not be reached \(Could not connect to the endpoint URL: \"http://127.0.0.1:9/\"\)\); nothing was built$"
  [[ ${#lines[@]} -eq 1 ]]
  assert_nothing_built
  [[ ! -e $BATS_TEST_TMPDIR/images ]]
}

@test "scripts/images azure without credentials: one line, exit 2, nothing started" {
  image_shims
  images azure client
  assert_failure 2
  assert_output "[images] error: scripts/images azure needs Azure credentials (none found: run 'az login', or set ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and ARM_SUBSCRIPTION_ID); nothing was built"
  assert_nothing_built
}

@test "scripts/images aws with credentials: packer 1.6.6 gets packer/ without plugins.pkr.hcl, the targets' image.pkr.hcl and the kit's digest" {
  image_shims
  # The packer shim records the template directory it was given and its build's sources.
  shim packer 'for a in "$@"; do [[ -d $a ]] && ls "$a" >"$SHIM_STATE/templates" && grep "^  sources =" "$a/builds.pkr.hcl" >"$SHIM_STATE/sources"; done; exit 0'
  for t in git gzip tar sha256sum od env nproc; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  start_fake_sts
  IMAGES_ENV=(AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=secret PFSLAB_AWS_ENDPOINT="$FAKE_STS_URL")
  images aws server
  assert_success
  run cat "$SHIM_STATE/templates"
  assert_output "builds.pkr.hcl
locals.pkr.hcl
target-aws.pkr.hcl
target-azure.pkr.hcl
target-baremetal.pkr.hcl
targets.pkr.hcl
variables.pkr.hcl"
  run cat "$SHIM_STATE/sources"
  assert_output '  sources = ["source.amazon-ebs.debian", "source.azure-arm.hpc", "source.qemu.debian"]'
  run calls packer
  assert_output --regexp "^packer build -color=false -only=image.amazon-ebs.debian -var kit_root=$KIT -var kit_archive=$BATS_TEST_TMPDIR/images/kit-[0-9a-f]{12}.tar.gz -var image_digest=[0-9a-f]{64} -var family=ceph -var toolchain=auto -var role=server"
  local digest
  digest=$("$KIT/scripts/image-digest")
  assert_output --partial "image_digest=$digest "
}

# ---- scripts/image-boot-test: bad input ----------------------------------------------------

@test "scripts/image-boot-test: no image, or an invalid user-data, is one line and exit 2 with no VM" {
  shim qemu-system-x86_64
  shim qemu-img
  shim genisoimage
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" "$KIT/scripts/image-boot-test"
  assert_failure 2
  assert_output "[image-boot-test] error: usage: image-boot-test IMAGE [USER_DATA]"
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" "$KIT/scripts/image-boot-test" "$BATS_TEST_TMPDIR/nothing"
  assert_failure 2
  assert_output "[image-boot-test] error: no image at $BATS_TEST_TMPDIR/nothing; build one with 'make images TARGET=qemu ROLE=server'"
  command -v cloud-init >/dev/null || skip "cloud-init is not installed (its schema check validates user-data)"
  local img=$BATS_TEST_TMPDIR/pfslab-server-ceph-000000000000
  mkdir -p "$img"
  echo disk >"$img/pfslab-server-ceph-000000000000.qcow2"
  echo k >"$img/vmlinuz"
  echo i >"$img/initrd"
  echo '{"disk": "pfslab-server-ceph-000000000000.qcow2"}' >"$img/image.json"
  printf '#cloud-config\nlocale: false\nruncmd: oops\n' >"$BATS_TEST_TMPDIR/node.yaml"
  ln -sf "$(command -v cloud-init)" "$SAFE/cloud-init"
  ln -sf "$(command -v python3)" "$SAFE/python3"
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" "$KIT/scripts/image-boot-test" "$img" "$BATS_TEST_TMPDIR/node.yaml"
  assert_failure 2
  assert_output --regexp "^\[image-boot-test\] error: $BATS_TEST_TMPDIR/node.yaml is not valid cloud-config: .*locale"
  [[ ${#lines[@]} -eq 1 ]]
  run calls
  assert_output ""
}

# ---- the image digest ------------------------------------------------------------------------

# A small kit: what an image carries, and what it must not.
fake_kit() {
  K=$BATS_TEST_TMPDIR/kit
  mkdir -p "$K/scripts" "$K/families/cephfs" "$K/labs" "$K/reframe/__pycache__" "$K/spack" "$K/build/images" "$K/.venv" "$K/packer" "$K/targets/aws"
  echo 'echo role' >"$K/families/cephfs/role"
  chmod +x "$K/families/cephfs/role"
  echo '{"filesystem": "cephfs", "family": "ceph"}' >"$K/families/cephfs/family.json"
  echo '{"target": "aws"}' >"$K/targets/aws/target.json"
  echo 'source "null" "aws" {}' >"$K/targets/aws/image.pkr.hcl"
  echo 'name: local' >"$K/labs/local.yaml"
  echo 'x = 1' >"$K/reframe/ior.py"
  echo 'bytecode' >"$K/reframe/__pycache__/ior.cpython-311.pyc"
  echo 'spack: {}' >"$K/spack/spack.yaml"
  echo 'reframe-hpc==4.10.4' >"$K/requirements.txt"
  echo 'state' >"$K/build/images/x"
  echo 'venv' >"$K/.venv/pyvenv.cfg"
  echo '# readme' >"$K/README.md"
}

digest() { PFSLAB_ROOT=$K "$KIT/scripts/image-digest" "$@"; }

@test "image-digest: covers scripts, families, labs, targets, reframe, spack, requirements.txt and nothing else; a family's role is also where nodes run it" {
  fake_kit
  run digest --files
  assert_success
  assert_output "families/cephfs/family.json
families/cephfs/role
labs/local.yaml
reframe/ior.py
requirements.txt
spack/spack.yaml
targets/aws/target.json"
  run digest --manifest
  assert_line --regexp "^[0-9a-f]{64}  755  families/cephfs/role$"
  # The node path of the family's role script (scripts/roles/<family>), the same bytes.
  assert_line --regexp "^$(sha256sum <"$K/families/cephfs/role" | cut -d' ' -f1)  755  scripts/roles/ceph$"
  assert_line --regexp "^[0-9a-f]{64}  644  labs/local.yaml$"
  run digest
  assert_output --regexp "^[0-9a-f]{64}$"
  [[ $output == $(digest --manifest | sha256sum | cut -d' ' -f1) ]]
}

@test "image-digest: changes when a copied file changes (content, mode, new file), not otherwise" {
  fake_kit
  local d0 d
  d0=$(digest)
  [[ $(digest) == "$d0" ]]
  # Outside the image: no change.
  echo more >>"$K/build/images/x"
  echo more >>"$K/.venv/pyvenv.cfg"
  echo more >>"$K/README.md"
  echo more >>"$K/reframe/__pycache__/ior.cpython-311.pyc"
  echo 'packer {}' >"$K/packer/plugins.pkr.hcl"
  echo '# Packer reads it, nodes do not' >>"$K/targets/aws/image.pkr.hcl"
  touch -d '2001-01-01' "$K/labs/local.yaml"
  [[ $(digest) == "$d0" ]]
  # Inside: content, the executable bit, a new file, a removed file.
  echo 'name: other' >"$K/labs/local.yaml"
  d=$(digest)
  [[ $d != "$d0" ]]
  echo 'name: local' >"$K/labs/local.yaml"
  [[ $(digest) == "$d0" ]]
  chmod -x "$K/families/cephfs/role"
  [[ $(digest) != "$d0" ]]
  chmod +x "$K/families/cephfs/role"
  echo 'new' >"$K/scripts/new"
  [[ $(digest) != "$d0" ]]
  rm "$K/scripts/new"
  [[ $(digest) == "$d0" ]]
  rm "$K/spack/spack.yaml"
  [[ $(digest) != "$d0" ]]
}

@test "image-digest: in a git checkout, what .gitignore excludes is not in the image" {
  command -v git >/dev/null || skip "git is not installed"
  fake_kit
  printf '__pycache__/\n/build/\n/.venv/\n*.log\n' >"$K/.gitignore"
  git -C "$K" init -q
  echo log >"$K/scripts/run.log"
  local d0
  d0=$(digest)
  run digest --files
  refute_output --partial run.log
  refute_output --partial __pycache__
  # An untracked file that is not ignored is part of the kit (it would be copied).
  echo 'new' >"$K/labs/new.yaml"
  [[ $(digest) != "$d0" ]]
  echo more >>"$K/scripts/run.log"
  rm "$K/labs/new.yaml"
  [[ $(digest) == "$d0" ]]
}

@test "kit archive: exactly the digest's files plus the manifest, owned by root" {
  fake_kit
  run bash -c "PFSLAB_ROOT='$K'; source '$KIT/scripts/lib/common.sh'; source '$KIT/scripts/lib/images.sh'; kit_archive '$BATS_TEST_TMPDIR/kit.tar.gz'"
  assert_success
  run bash -c "tar -tzf '$BATS_TEST_TMPDIR/kit.tar.gz' | grep -v '/$' | sort"
  assert_output ".pfslab-manifest
families/cephfs/family.json
families/cephfs/role
labs/local.yaml
reframe/ior.py
requirements.txt
scripts/roles/ceph
spack/spack.yaml
targets/aws/target.json"
  run bash -c "tar -tvzf '$BATS_TEST_TMPDIR/kit.tar.gz' scripts/roles/ceph"
  assert_output --regexp "^-rwxr-xr-x 0/0 "
  run bash -c "tar -xOzf '$BATS_TEST_TMPDIR/kit.tar.gz' scripts/roles/ceph"
  assert_output "echo role"
  run bash -c "tar -xOzf '$BATS_TEST_TMPDIR/kit.tar.gz' .pfslab-manifest | sha256sum | cut -d' ' -f1"
  assert_output "$(digest)"
}

@test "scripts/images qemu: an image built from this kit and base is up to date, nothing started" {
  [[ $(id -u) -eq 0 ]] || skip "scripts/images qemu needs root"
  image_shims
  for t in git gzip tar sha256sum od env nproc; do ln -sf "$(command -v "$t")" "$SAFE/$t"; done
  shim genisoimage
  local images=$BATS_TEST_TMPDIR/images base digest name
  base=$(bash -c "source '$KIT/scripts/lib/common.sh'; source '$KIT/scripts/lib/images.sh'; base_digest")
  digest=$("$KIT/scripts/image-digest")
  name=pfslab-server-ceph-${digest:0:12}
  mkdir -p "$images/$name"
  for f in qcow2 vmlinuz initrd; do echo x >"$images/base-${base:0:16}.$f"; done
  echo x >"$images/$name/$name.qcow2"
  images qemu server
  assert_success
  assert_line "[images] base image $images/base-${base:0:16}.qcow2 is up to date"
  assert_line "[images] $name is up to date ($images/$name); FORCE=1 rebuilds it"
  assert_line "$images/$name/$name.qcow2"
  run calls
  assert_output ""
}
