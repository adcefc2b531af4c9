#!/usr/bin/env bats
# shellcheck disable=SC2016
# The cross-node bring-up of a cloud lab (scripts/remote-up, scripts/lib/remote.sh)
# against ssh and scp shims: the exact commands, in order, from the inventory alone.

load helpers

setup() {
  sandbox
  BUILD=$BATS_TEST_TMPDIR/build
  LAB=$BUILD/aws-cephfs
  mkdir -p "$LAB/ssh"
  : >"$LAB/ssh/id_ed25519"
  # As the aws root writes it by default: only the login node (cli0) has a public
  # address; the others are reached through it.
  jq -n '{lab: "aws-cephfs", target: "aws", ssh: {user: "root"}, cluster_path: "/etc/pfslab/cluster", login: "cli0",
    aws: {region: "us-east-1", instance_ids: {mon0: "i-0mon", osd0: "i-0osd", cli0: "i-0cli"}},
    nodes: [
      {name: "mon0", group: "mon", roles: ["ceph-mon", "ceph-mgr"], address: "10.21.0.10", ssh_address: "10.21.0.10", ssh_jump: "cli0"},
      {name: "osd0", group: "osd", roles: ["ceph-osd"], address: "10.21.0.11", ssh_address: "10.21.0.11", ssh_jump: "cli0"},
      {name: "cli0", group: "cli", roles: ["ceph-client"], address: "10.21.0.12", ssh_address: "198.51.100.12", ssh_jump: null}],
    phases: [[{node: "mon0", role: "ceph-mon"}], [{node: "mon0", role: "ceph-mgr"}], [{node: "osd0", role: "ceph-osd"}], [], [{node: "cli0", role: "ceph-client"}]]}' \
    >"$LAB/inventory.json"
  jq -n '{name: "aws-cephfs", instance: {id: "aws-cephfs-0123abcd"}, benchmark: {}}' >"$LAB/lab.json"
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *"ls -A"*) [[ $* == *" mon0 "* ]] && printf "%s\n" ceph.client.admin.keyring ceph.client.bootstrap-mgr.keyring \
    ceph.client.bootstrap-osd.keyring ceph.client.pfslab.keyring ceph.conf ceph.mon.keyring monmap ;;
esac'
  shim scp
  # EC2's console of each instance, with the host keys cloud-init printed (CRLF, as EC2 serves it).
  shim aws '
[[ $* == *get-console-output* ]] || exit 0
args="$*"; id=${args##*--instance-id }; id=${id%% *}
printf "%s\r\n" "[   12.3] cloud-init[812]: Cloud-init v. 22.4.2 running modules:final" "-----BEGIN SSH HOST KEY KEYS-----" \
  "ecdsa-sha2-nistp256 AAAAE2VjZHNh$id root@ip-10-21-0-1" "ssh-ed25519 AAAAC3NzaC1l$id root@ip-10-21-0-1" "-----END SSH HOST KEY KEYS-----"'
  O="-F $LAB/ssh/config"
}

remote_up() {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" SHIM_STATE="$SHIM_STATE" PFSLAB_BUILD="$BUILD" PFSLAB_RESTART_WAIT="${PFSLAB_RESTART_WAIT:-30}" \
    ${PFSLAB_ROLE_STEP_TIMEOUT:+PFSLAB_ROLE_STEP_TIMEOUT=$PFSLAB_ROLE_STEP_TIMEOUT} ${PFSLAB_COPY_TIMEOUT:+PFSLAB_COPY_TIMEOUT=$PFSLAB_COPY_TIMEOUT} \
    "$KIT/scripts/remote-up" "$@"
}

@test "remote-up: wait for every first boot, copy the cluster files, start phase by phase, preflight" {
  remote_up aws-cephfs
  assert_success
  assert_line "preflight: every check passed on lab aws-cephfs"
  r="PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles"
  # The commands up to preflight, in order (preflight's own ssh calls follow). The cluster
  # files' copy and the role steps go through the kit's SSH transport (pfslab/transport/ssh.py:
  # -F before -n).
  # (The kit's digest check and unpack on each node are the next test's.)
  grep -vE 'pfslab-manifest|pfslab-kit-sync' "$SHIM_LOG" >"$SHIM_LOG.main"
  SHIM_LOG=$SHIM_LOG.main
  run bash -c "grep -E '^(ssh|scp) ' '$SHIM_LOG' | sed -n '1,14p'"
  # The login node's first boot first: the others are reached through it.
  assert_output "ssh -n $O cli0 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O cli0 cloud-init status
ssh -n $O mon0 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O mon0 cloud-init status
ssh -n $O osd0 test -e /var/lib/cloud/instance/boot-finished
ssh -n $O osd0 cloud-init status
ssh $O -n mon0 ls -A '/etc/pfslab/cluster' 2>/dev/null
ssh $O -n osd0 mkdir -p '/etc/pfslab/cluster' && chmod 700 '/etc/pfslab/cluster'
scp -3 -q -p $O mon0:/etc/pfslab/cluster/ceph.client.bootstrap-osd.keyring mon0:/etc/pfslab/cluster/ceph.conf osd0:/etc/pfslab/cluster/
ssh $O -n cli0 mkdir -p '/etc/pfslab/cluster' && chmod 700 '/etc/pfslab/cluster'
scp -3 -q -p $O mon0:/etc/pfslab/cluster/ceph.client.pfslab.keyring mon0:/etc/pfslab/cluster/ceph.conf cli0:/etc/pfslab/cluster/
ssh $O -n mon0 $r/ceph up mon
ssh $O -n mon0 $r/ceph up mgr
ssh $O -n osd0 $r/ceph up osd"
  assert_equal "$(grep -E '^(ssh|scp) ' "$SHIM_LOG" | sed -n '15p')" "ssh $O -n cli0 $r/ceph up client"
  # Then the login node is readied (preflight's MPI probe runs there): its kit first.
  assert_equal "$(grep -E '^(ssh|scp) ' "$SHIM_LOG" | sed -n '16p')" "ssh -n $O cli0 test -x '/opt/pfslab/.venv/bin/pfslab' && test -x '/opt/pfslab/.venv/bin/reframe'"
  # preflight, after it, uses the same config, by node name.
  run bash -c "grep -nE '^(ssh|scp) ' '$SHIM_LOG' | grep -F -e 'scripts/lab-rsh' -e 'ssh -F $LAB/ssh/config -n mon0 $r/common health fabric' | cut -d: -f1 | tr '\n' ' '"
  [[ $output =~ ^([0-9]+)\ ([0-9]+)\ $ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2]))
  # No ssh or scp of the kit runs without the lab's config.
  [ -z "$(grep -E '^(ssh|scp) ' "$SHIM_LOG" | grep -v -- "-F $LAB/ssh/config")" ]
}

@test "remote-up: host keys are pinned from each instance's console before the first connection" {
  remote_up aws-cephfs
  assert_success
  assert_line "[remote] pinned the host keys node osd0 printed on its console (ecdsa-sha2-nistp256 ssh-ed25519)"
  run cat "$LAB/ssh/known_hosts"
  assert_line "osd0 ssh-ed25519 AAAAC3NzaC1li-0osd"
  assert_line "mon0 ecdsa-sha2-nistp256 AAAAE2VjZHNhi-0mon"
  assert_equal "$(stat -c %a "$LAB/ssh/known_hosts")" 600
  # The console is read before the node's first ssh.
  run bash -c "grep -nE 'i-0osd|osd0 test -e' '$SHIM_LOG' | cut -d: -f1 | tr '\n' ' '"
  [[ $output =~ ^([0-9]+)\ ([0-9]+)\ $ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2]))
  # Once pinned, a changed key is refused, not learned.
  assert_equal "$(ssh -G -F "$LAB/ssh/config" osd0 | grep -i '^stricthostkeychecking')" "stricthostkeychecking true"
}

@test "remote-up: the login node is pinned before anything connects through it; no connection may learn a key" {
  # Each ssh notes whether its config would accept a new key from any node then.
  shim ssh '
prev=""; for a in "$@"; do [[ $prev == -F ]] && echo "accept-new lines: $(grep -c accept-new "$a")" >>"$SHIM_STATE/strictness"; prev=$a; done
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
esac'
  remote_up aws-cephfs
  assert_success
  # The first console read is the login node's, before any ssh at all.
  run bash -c "grep -nE 'get-console-output|^ssh ' '$SHIM_LOG' | head -n 2"
  assert_line --index 0 --regexp "^[0-9]+:aws .*i-0cli"
  run sort -u "$SHIM_STATE/strictness"
  assert_output "accept-new lines: 0"
}

@test "remote-up: a node whose console never shows its host keys is named, and nothing connects to it" {
  shim aws 'exit 0'
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" PFSLAB_BOOT_TIMEOUT=0 "$KIT/scripts/remote-up" aws-cephfs
  assert_failure 2
  # The login node first: nothing connects through it before its key is pinned.
  assert_output "[remote] error: node cli0 of lab aws-cephfs printed no SSH host keys on its console in 0s; see its console output"
  [ -z "$(calls ssh)" ]
}

@test "remote-up: one ssh config, the lab's key only, no agent, the inner nodes through the login node" {
  remote_up aws-cephfs
  assert_success
  assert_equal "$(stat -c %a "$LAB/ssh/config")" 600
  assert_equal "$(stat -c %a "$LAB/ssh")" 700
  # What ssh itself makes of the config (ssh -G connects nowhere).
  run ssh -G -F "$LAB/ssh/config" osd0
  assert_line "hostname 10.21.0.11"
  assert_line "user root"
  assert_line "proxyjump cli0"
  assert_line "hostkeyalias osd0"
  assert_line "identitiesonly yes"
  assert_line "identityfile $LAB/ssh/id_ed25519"
  assert_line "forwardagent no"
  assert_line "batchmode yes"
  assert_line "passwordauthentication no"
  assert_line "userknownhostsfile $LAB/ssh/known_hosts"
  run ssh -G -F "$LAB/ssh/config" cli0
  assert_line "hostname 198.51.100.12"
  refute_line --partial "proxyjump"
  # The lab address is an alias of the node (preflight and job scripts use it).
  run ssh -G -F "$LAB/ssh/config" 10.21.0.11
  assert_line "hostname 10.21.0.11"
  assert_line "proxyjump cli0"
}

@test "remote-up: a failed first boot names the node and shows its cloud-init output" {
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") [[ $* == *" osd0 "* ]] && { echo "status: error"; exit 1; }; echo "status: done" ;;
  tail*) echo "beegfs: /dev/disk/pfslab/data3 does not exist" ;;
esac'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] osd0: beegfs: /dev/disk/pfslab/data3 does not exist"
  assert_line "[remote] error: the first boot of node osd0 of lab aws-cephfs failed (status: error); see /var/log/cloud-init-output.log on it"
  [ -z "$(calls scp)" ]
}

@test "remote-up: no cluster files on the bootstrap node (NFS, GPFS): nothing is copied" {
  shim ssh '
case ${!#} in "cloud-init status") echo "status: done" ;; *"ls -A"*) exit 1 ;; esac'
  remote_up aws-cephfs
  assert_success
  assert_line "[remote] the bootstrap node mon0 has no cluster files in /etc/pfslab/cluster; nothing to distribute"
  [ -z "$(calls scp)" ]
}

@test "remote-up: a role that fails to start stops the bring-up, naming role, node and phase" {
  shim ssh '
case ${!#} in
  "cloud-init status") echo "status: done" ;;
  *"ceph up osd") echo "osd.0: drive /dev/disk/pfslab/data0 is not a block device" >&2; exit 2 ;;
esac'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] error: ceph-osd up (phase 2) failed on osd0 of lab aws-cephfs (exit status 2; its output is above); fix it, then run 'make lab-up LAB=aws-cephfs' again"
  [ -z "$(calls ssh | grep 'ceph up client')" ]
}

@test "remote-up: existing hosts run their first-boot script over ssh instead of waiting for cloud-init" {
  jq '.target = "baremetal" | del(.aws) | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}} | .nodes |= map(del(.ssh_address, .ssh_jump))' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\necho boot %s\n' "$n" >"$LAB/boot/$n.sh"; done
  # ssh learns each host's key on first use (StrictHostKeyChecking accept-new).
  ssh-keygen -q -t ed25519 -N '' -C host -f "$BATS_TEST_TMPDIR/hostkey"
  shim ssh "[[ \${!#} == -s ]] && printf '%s %s\\n' \"\$3\" '$(cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/hostkey.pub")' >>\"\$(dirname \"\$2\")/known_hosts\"; exit 0"
  remote_up aws-cephfs
  assert_success
  [ -z "$(calls ssh | grep boot-finished)" ]
  assert_equal "$(calls ssh | grep -c 'sh -s$')" 3
  assert_equal "$(calls ssh | grep -c "^ssh $O mon0 sh -s$")" 1
  # No console to pin from: trust on first use, said as such, with the key's fingerprint.
  [ -z "$(calls aws)" ]
  assert_line "[remote] host key of mon0 trusted on first use (no console to pin it from): $(ssh-keygen -l -f "$BATS_TEST_TMPDIR/hostkey.pub" | cut -d' ' -f2) (ED25519)"
  assert_equal "$(ssh -G -F "$LAB/ssh/config" mon0 | grep -i '^stricthostkeychecking')" "stricthostkeychecking accept-new"
}

@test "remote-up: an existing host's first-boot script that fails is named with its exit status; one whose host restarts, as restarted" {
  jq '.target = "baremetal" | del(.aws) | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}} | .nodes |= map(del(.ssh_address, .ssh_jump))' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\n' >"$LAB/boot/$n.sh"; done
  shim ssh '[[ ${!#} == -s && $* == *" osd0 "* ]] && exit 3; exit 0'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] error: its first-boot script failed on osd0 of lab aws-cephfs (exit status 3; its output is above); fix it, then run 'make lab-up LAB=aws-cephfs' again"
  # The connection breaks in the middle; osd0 answers the probe after it (remote_step_failed's 255).
  shim ssh '[[ ${!#} == -s && $* == *" osd0 "* ]] && exit 255; exit 0'
  remote_up aws-cephfs
  assert_failure 2
  assert_line "[remote] error: host osd0 restarted during its first-boot script (its SSH connection broke, and it answers again); run 'make lab-up LAB=aws-cephfs' again (it resumes)"
  [ -z "$(calls ssh | grep 'ceph up')" ]
}

@test "remote-down stops the roles in reverse phase order" {
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/remote-down" aws-cephfs
  assert_success
  run calls ssh
  assert_output --regexp "ceph stop client.*
.*ceph stop osd.*
.*ceph stop mgr.*
.*ceph stop mon$"
}

@test "remote-down: a stop that fails is logged and ignored; the other roles still stop" {
  shim ssh '[[ ${!#} == *"ceph stop osd" ]] && { echo "osd.0: still busy" >&2; exit 1; }; exit 0'
  run /usr/bin/env -i PATH="$SHIMS:$SAFE" SHIM_LOG="$SHIM_LOG" PFSLAB_BUILD="$BUILD" "$KIT/scripts/remote-down" aws-cephfs
  assert_success
  assert_line "osd.0: still busy"
  assert_line "[remote] could not stop ceph-osd on osd0 (ignored)"
  assert_line "[remote] stopped every role of lab aws-cephfs"
  assert_equal "$(calls ssh | grep -c 'ceph stop')" 4
}

@test "remote-up without an inventory: one line" {
  remote_up nope
  assert_failure 2
  assert_output "[remote] error: lab nope has no inventory ($BUILD/nope/inventory.json); run 'make lab-up LAB=nope'"
}

@test "remote-up ends by making the login node ready to launch benchmarks: inner key, inside view, strict host keys" {
  # The login node's side: the inner key's public half, and what it is sent on stdin kept.
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *"cat '"'"'/opt/pfslab/build/aws-cephfs/ssh/id_ed25519.pub'"'"'"*) echo "ssh-ed25519 AAAAinner pfslab-inner lab=aws-cephfs instance=aws-cephfs-0123abcd" ;;
  *"tar -C '"'"'/opt/pfslab/build'"'"' -xf -"*) mkdir -p "$SHIM_STATE/shipped" && tar -C "$SHIM_STATE/shipped" -xf - ;;
esac'
  remote_up aws-cephfs
  assert_success
  assert_line "[remote] the lab's inner key (made on cli0, never copied off it) is authorised on every node for 10.21.0.12 only"
  # Made on the login node, never sent anywhere.
  assert_equal "$(calls ssh | grep -c 'ssh-keygen')" 1
  calls ssh | grep 'ssh-keygen' | grep -q -- " cli0 "
  # Authorised on each node for connections from the login node's lab address only.
  for n in mon0 osd0 cli0; do
    calls ssh | grep -- " $n " | grep -qF 'from="10.21.0.12",no-agent-forwarding,no-port-forwarding,no-X11-forwarding ssh-ed25519 AAAAinner pfslab-inner lab=aws-cephfs instance=aws-cephfs-0123abcd'
  done
  # The inside view: every node at its lab address, no jump, the inner key; host keys strict.
  S=$SHIM_STATE/shipped
  assert_equal "$(cat "$S/active-lab")" aws-cephfs
  assert_equal "$(jq -c '[.nodes[] | [.ssh_address == .address, .ssh_jump]] | unique' "$S/aws-cephfs/inventory.json")" '[[true,null]]'
  assert_equal "$(jq -r '.inside, .ssh.key' "$S/aws-cephfs/inventory.json" | tr '\n' ' ')" "cli0 /opt/pfslab/build/aws-cephfs/ssh/id_ed25519 "
  run grep -c ProxyJump "$S/aws-cephfs/ssh/config"
  assert_output 0
  grep -q 'IdentityFile /opt/pfslab/build/aws-cephfs/ssh/id_ed25519' "$S/aws-cephfs/ssh/config"
  # Pinned from the consoles: every node strict from inside too.
  assert_equal "$(grep -c 'StrictHostKeyChecking yes' "$S/aws-cephfs/ssh/config")" 3
  assert_equal "$(stat -c %a "$S/aws-cephfs/ssh")" 700
  [ -z "$(find "$S" -name 'id_ed25519*')" ]
}

# Each way a host can fail to let the kit in, as ssh reports it: one line naming the
# host, its address (and jump) and what to do.
@test "existing hosts that cannot be reached: sshd down, key refused, host key changed, no answer" {
  jq '.target = "baremetal" | del(.aws) | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}} | .ssh.key = "'"$LAB"'/ssh/id_ed25519"' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\n' >"$LAB/boot/$n.sh"; done
  declare -A said=(
    ["channel 0: open failed: connect failed: Connection refused
stdio forwarding failed
Connection closed by UNKNOWN port 65535"]="host osd0 (10.21.0.11, through cli0): nothing accepts SSH connections on port 22 (connection refused: its sshd is not running); start sshd on it, then run 'make lab-up LAB=aws-cephfs' again (it resumes)"
    ["root@10.21.0.11: Permission denied (publickey)."]="host osd0 (10.21.0.11, through cli0) refuses the lab's key $LAB/ssh/id_ed25519 for root (Permission denied): authorise $LAB/ssh/id_ed25519.pub in ~root/.ssh/authorized_keys on it, then run 'make lab-up LAB=aws-cephfs' again (it resumes)"
    ["@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
The fingerprint for the ED25519 key sent by the remote host is
SHA256:q0QcUfbXa3rZy1r7bkRlq4Dv4b2qg9mO4Dk4ZkJ4bXo.
Host key verification failed."]="host osd0 (10.21.0.11, through cli0): its SSH host key (SHA256:q0QcUfbXa3rZy1r7bkRlq4Dv4b2qg9mO4Dk4ZkJ4bXo) is not the one recorded in $LAB/ssh/known_hosts, so nothing was sent to it (a reinstalled host, or another machine at that address); do not remove the recorded key on trust: compare, on the host's own console, 'ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub' with the key ssh was shown, and only if they match replace osd0's line in $LAB/ssh/known_hosts, then run 'make lab-up LAB=aws-cephfs' again (it resumes)"
    ["channel 0: open failed: connect failed: No route to host"]="host osd0 (10.21.0.11, through cli0) does not answer (No route to host): is it powered on and on the network? Bring it back, then run 'make lab-up LAB=aws-cephfs' again (it resumes)"
  )
  for err in "${!said[@]}"; do
    printf '%s\n' "$err" >"$BATS_TEST_TMPDIR/err"
    shim ssh '[[ $* == *" osd0 "* ]] && { cat "'"$BATS_TEST_TMPDIR/err"'" >&2; exit 255; }; exit 0'
    remote_up aws-cephfs
    assert_failure 2
    assert_output --partial "[remote] error: ${said[$err]}"
    # Nothing was started on any host: the check comes before the first boot.
    [ -z "$(calls ssh | grep 'sh -s$')" ]
  done
}

@test "a host that goes away in the middle of a step is named as such, not the step" {
  jq '.target = "baremetal" | del(.aws) | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}}' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\n' >"$LAB/boot/$n.sh"; done
  # osd0 restarts while its OSD starts: the step's connection breaks, then osd0 refuses.
  shim ssh '
[[ $* == *" osd0 "*"ceph up osd" ]] && { echo "Connection to 10.21.0.11 closed by remote host." >&2; : >"$SHIM_STATE/osd0-down"; exit 255; }
[[ $* == *" osd0 "* && -e $SHIM_STATE/osd0-down ]] && { echo "channel 0: open failed: connect failed: Connection refused" >&2; exit 255; }
exit 0'
  PFSLAB_RESTART_WAIT=3 remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: lost osd0 during ceph-osd up (phase 2): host osd0 (10.21.0.11, through cli0): nothing accepts SSH connections on port 22"
  [ -z "$(calls ssh | grep 'ceph up client')" ]
}

@test "a host that restarts in the middle of a step and answers again is named as restarted" {
  jq '.target = "baremetal" | del(.aws) | .baremetal = {hosts: {mon0: "10.21.0.10", osd0: "10.21.0.11", cli0: "10.21.0.12"}}' \
    "$LAB/inventory.json" >"$LAB/inv" && mv "$LAB/inv" "$LAB/inventory.json"
  mkdir -p "$LAB/boot"
  for n in mon0 osd0 cli0; do printf '#!/bin/sh\n' >"$LAB/boot/$n.sh"; done
  # osd0's step breaks once; osd0 refuses one probe, then answers (it came back).
  shim ssh '
if [[ $* == *" osd0 "*"ceph up osd" ]]; then echo "Connection to 10.21.0.11 closed by remote host." >&2; : >"$SHIM_STATE/broke"; exit 255; fi
if [[ $* == *" osd0 true" && -e $SHIM_STATE/broke && ! -e $SHIM_STATE/refused ]]; then : >"$SHIM_STATE/refused"; echo "channel 0: open failed: connect failed: Connection refused" >&2; exit 255; fi
exit 0'
  PFSLAB_RESTART_WAIT=6 remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: host osd0 restarted during ceph-osd up (phase 2) (its SSH connection broke, and it answers again); run 'make lab-up LAB=aws-cephfs' again (it resumes)"
}

@test "remote-up brings every node's kit in step with this checkout (digest checked, unpacked where it differs)" {
  # mon0 has this checkout's kit; osd0 and cli0 an older one.
  want=$(cd "$KIT" && bash -c 'source scripts/lib/common.sh; source scripts/lib/images.sh; image_digest')
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *pfslab-manifest*) [[ $* == *" mon0 "* ]] && echo "'"$want"'" || echo 0123456789abcdef ;;
  *"bash -s sync"*) cat >"$SHIM_STATE/install-kit.sh" ;;
esac'
  remote_up aws-cephfs
  assert_success
  assert_line "[remote] the kit on osd0 (0123456789ab at /opt/pfslab) is not this checkout's (${want:0:12}): unpacking this checkout's there"
  assert_line "[remote] every node of lab aws-cephfs runs this checkout's kit (${want:0:12})"
  [ -z "$(calls ssh | grep ' mon0 ' | grep 'pfslab-kit-sync')" ]
  assert_equal "$(calls ssh | grep -c "bash -s sync $want")" 2
  # What runs there is the image build's own install step, in its sync mode.
  cmp "$SHIM_STATE/install-kit.sh" "$KIT/packer/scripts/install-kit.sh"
}

# A step that hangs (a stuck node, network or role) is stopped at its limit and named
# in one line: node, step, limit, the variable that raises it; nothing after it runs.
@test "a role step that does not finish in its limit is stopped and named, with how to raise the limit" {
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *"ceph up osd") exec sleep 30 ;;
esac'
  SECONDS=0
  PFSLAB_ROLE_STEP_TIMEOUT=1 remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: role step 'ceph up osd' on node osd0 of lab aws-cephfs did not finish within 1s, its limit; if it needs longer, run the command again with PFSLAB_ROLE_STEP_TIMEOUT=<seconds> in its environment (default 1800)"
  assert_equal "$(grep -c 'error' <<<"$output")" 1
  ((SECONDS < 20))
  [ -z "$(calls ssh | grep 'ceph up client')" ]
}

@test "a copy of the cluster files that does not finish in its limit is stopped and named" {
  shim scp 'exec sleep 30'
  SECONDS=0
  PFSLAB_COPY_TIMEOUT=1 remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: copying the cluster files from mon0 on node osd0 of lab aws-cephfs did not finish within 1s, its limit; if it needs longer, run the command again with PFSLAB_COPY_TIMEOUT=<seconds> in its environment (default 600)"
  ((SECONDS < 20))
  [ -z "$(calls ssh | grep 'ceph up')" ]
}

@test "a kit sync that does not finish in its limit is stopped and named" {
  shim ssh '
cmd=${!#}
case $cmd in
  "cloud-init status") echo "status: done" ;;
  *pfslab-manifest*) echo 0123456789abcdef ;;
  *"cat >"*kit.tar.gz*) cat >/dev/null; exec sleep 30 ;;
esac'
  SECONDS=0
  PFSLAB_COPY_TIMEOUT=1 remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: copying this checkout's kit on node mon0 of lab aws-cephfs did not finish within 1s, its limit; if it needs longer, run the command again with PFSLAB_COPY_TIMEOUT=<seconds> in its environment (default 600)"
  ((SECONDS < 20))
  [ -z "$(calls ssh | grep 'bash -s sync')" ]
  # The archive it was sending stays with the lab's state (lab-down removes it).
  compgen -G "$LAB/kit-sync.*" >/dev/null
}

@test "a limit that is not a number of seconds is refused in one line" {
  PFSLAB_ROLE_STEP_TIMEOUT=1h remote_up aws-cephfs
  assert_failure 2
  assert_output --partial "[remote] error: PFSLAB_ROLE_STEP_TIMEOUT=1h is not allowed; give a number of seconds above 0 (default 1800)"
}
