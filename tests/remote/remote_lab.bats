#!/usr/bin/env bats
# The remote path for real, on hosts of this machine (scripts/hosts: system containers,
# each its own network, mount, UTS and PID namespace, an sshd that takes only the lab's
# key, only the login host reachable from here): the faults bring-up must name, a
# lab-up that resumes after a host restarted in the middle, a bench launched from the
# login host across the client hosts and brought home, a bench whose SSH session is cut
# or whose make bench is killed (reattached, brought home once), its report, a client host that
# dies during a bench, lab-down (hosts as found), hosts-down (nothing left).
# `make test-remote` (and .ci/run) runs it; it needs root, mmdebstrap and a Debian
# mirror (the hosts' images are built from the kit's image recipe on first use).
# The tests run in order and share the hosts; teardown_file takes everything down.

bats_load_library bats-support
bats_load_library bats-assert
load ../lib/skip-file
load ../lib/timed

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
LAB=hosts-cephfs

setup_file() {
  [[ $(id -u) -eq 0 ]] || { skip_file "the hosts need root (namespaces, loop devices)"; return 0; }
  [[ -x $REPO/scripts/hosts ]] || { skip_file "scripts/hosts is missing"; return 0; }
  command -v mmdebstrap >/dev/null || { skip_file "mmdebstrap is missing (make deps installs it)"; return 0; }
  if [[ -s $REPO/build/active-lab ]]; then
    echo "# lab $(cat "$REPO/build/active-lab") is up in $REPO; this test brings up its own and refuses to share" >&3
    return 1
  fi
  timed "hosts-up" make -C "$REPO" --no-print-directory hosts-up HOSTS="$LAB" >&3 2>&1
  local host
  for host in $(hosts); do
    # What another local user of the host could plant where an older kit put its
    # temporary files: links to root's files. lab-up and lab-down must neither use nor
    # follow them (the last test checks the links and their targets).
    hosts_exec "$host" sh -c 'ln -s /etc/shadow /tmp/pfslab-hosts && ln -s /etc/shadow /tmp/pfslab-kit-sync.tar.gz && chown -h nobody /tmp/pfslab-hosts /tmp/pfslab-kit-sync.tar.gz'
    host_listing "$host" >"$BATS_FILE_TMPDIR/before-$host"
    hosts_exec "$host" sha1sum /etc/shadow >"$BATS_FILE_TMPDIR/shadow-$host"
  done
}

hosts() { "$REPO/.venv/bin/pfslab" lab show "$LAB" | jq -r '.targets.baremetal.hosts | keys[]'; }

# What a host holds, as the test compares it before lab-up and after lab-down: every
# file under /etc, /var/lib, /opt and /run (type, mode, owner; /etc's contents too),
# the signatures on its data disks, its mounts and its processes. The README's safety
# text says what may differ (docs/safety.md, "What stays on existing hosts").
host_listing() {
  hosts_exec "$1" sh -c '
    find /etc /var/lib /opt /run -xdev -printf "%y %m %U %p\n" 2>/dev/null
    find /etc -xdev -type f -exec sha1sum {} + 2>/dev/null | sed "s/^/content /"
    for d in /dev/vd[b-z]; do [ -b "$d" ] && echo "disk $d $(blkid -p -o export "$d" 2>/dev/null | grep -E "^(TYPE|PTTYPE|LABEL)=" | sort | tr "\n" " ")"; done
    awk "{print \"mount \" \$2}" /proc/self/mounts
    ps -eo comm= | sed "s/^/process /"' | sort -u
}

# The listing less what docs/safety.md says stays ("What stays on existing hosts"): the
# kit under /opt/pfslab (brought in step with this checkout, as images carry it), the
# run-time files of the host's own services in /run (sshd's, the login's motd,
# util-linux's mount table), and the commands of the listing itself.
comparable() {
  grep -vE '^(. [0-7]+ [0-9]+ |content [0-9a-f]+  )/opt/pfslab(/|$)' "$1" |
    grep -vE '^. [0-7]+ [0-9]+ /run/(sshd|sshd\.pid|utmp|motd\.dynamic|mount|mount/utab)$' |
    grep -vE '^process (sh|find|sort|ps|sed|awk|blkid|sha1sum|grep|tr)$'
}

setup() { skip_when_file_skipped; }

teardown_file() {
  [[ -z ${PFSLAB_SKIP_FILE:-} ]] || return 0
  "$REPO/scripts/lab" down "$LAB" >/dev/null 2>&1 || true
  "$REPO/scripts/hosts" down "$LAB" >/dev/null 2>&1 || true
}

hosts_exec() { "$REPO/scripts/hosts" exec "$LAB" "$@"; }
resolved() { "$REPO/.venv/bin/pfslab" lab show "$LAB" --instance | jq -r "$1"; }
lab_up() { run timed "$1" make -C "$REPO" --no-print-directory lab-up LAB="$LAB"; }

# An SSH banner within 5 s from ADDR:PORT (a machine's gateway may accept any TCP
# connection and then say nothing: only an answering sshd counts).
banner() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2 && head -c 4 <&3" 2>/dev/null; }

@test "from this machine only the login host's SSH answers; the other hosts' addresses do not" {
  local login other
  login=$(resolved .targets.baremetal.login_address)
  run banner "$login" 22
  assert_output "SSH-"
  # Another port of the login host: dropped by its firewall (a listener is there).
  hosts_exec cli0 sh -c 'python3 -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"0.0.0.0\", 2222)); s.listen(); time.sleep(30)" >/dev/null 2>&1 &'
  sleep 0.5
  run hosts_exec cli1 timeout 5 bash -c "exec 3<>/dev/tcp/10.97.0.20/2222"
  assert_success
  run timeout 5 bash -c "exec 3<>/dev/tcp/$login/2222"
  assert_failure
  # The other hosts are unreachable from here, proved without sending them anything
  # (a probe would leave by the default route, to an address that is not ours): no
  # route of this machine leads into the lab but the login host's /30.
  for other in $(resolved '.targets.baremetal.hosts | to_entries[] | select(.key != "cli0") | .value'); do
    run ip -o route get "$other"
    refute_output --partial "$(resolved .instance.login_link)"
  done
  run ip -o route show dev "$(resolved .instance.login_link)"
  assert_output --regexp "^[0-9.]+/30 "
  # Hosts reach each other on the lab's subnet.
  run hosts_exec cli1 bash -c 'exec 3<>/dev/tcp/10.97.0.10/22 && head -c 4 <&3'
  assert_output "SSH-"
}

@test "each host is its own machine: hostname, PID 1, /etc; its sshd takes the lab's key only" {
  local marker=/etc/pfslab-test-$$
  hosts_exec osd0 sh -c "echo osd0 >$marker"
  run hosts_exec osd1 test -e "$marker"
  assert_failure
  [ ! -e "$marker" ]
  run hosts_exec osd1 hostname
  assert_output osd1
  run hosts_exec osd1 cat /proc/1/cmdline
  assert_output --partial "tini"
  run hosts_exec osd1 sh -c 'ps -e --no-headers | wc -l'
  [ "$output" -lt 20 ]
  hosts_exec osd0 rm -f "$marker"
  # Only public keys are offered: no password, no keyboard-interactive.
  run timeout 20 ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o PreferredAuthentications=password,keyboard-interactive root@"$(resolved .targets.baremetal.login_address)" true
  assert_failure 255
  assert_output --partial "Permission denied (publickey)"
  # Another key is refused; the lab's key is taken, also through the login host.
  ssh-keygen -q -t ed25519 -N '' -f "$BATS_FILE_TMPDIR/other"
  run timeout 20 ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o IdentitiesOnly=yes -i "$BATS_FILE_TMPDIR/other" root@"$(resolved .targets.baremetal.login_address)" true
  assert_failure 255
  assert_output --partial "Permission denied (publickey)"
  local key
  key=$REPO/$(resolved .targets.baremetal.ssh_key)
  run timeout 30 ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -i "$key" \
    -o ProxyCommand="ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -i $key -W %h:%p root@$(resolved .targets.baremetal.login_address)" \
    root@10.97.0.11 hostname
  assert_success
  assert_output --partial osd0
}

@test "an impostor at the login host's address (another host key than the pinned one) is refused before anything is sent" {
  # The hosts' keys as their provider recorded them: the lab pins them (known_hosts_file).
  run cut -d' ' -f1 "$REPO/$(resolved .targets.baremetal.known_hosts_file)"
  assert_line cli0
  assert_line osd1
  # The login host's keys replaced: to the kit it is another machine answering there.
  hosts_exec cli0 sh -c 'mkdir -p /root/keys.away && mv /etc/ssh/ssh_host_* /root/keys.away/ && ssh-keygen -A >/dev/null'
  "$REPO/scripts/hosts" stop-sshd "$LAB" cli0
  "$REPO/scripts/hosts" up "$LAB" >/dev/null
  lab_up "lab-up (an impostor login host)"
  hosts_exec cli0 sh -c 'rm -f /etc/ssh/ssh_host_* && mv /root/keys.away/* /etc/ssh/ && rmdir /root/keys.away'
  "$REPO/scripts/hosts" stop-sshd "$LAB" cli0
  "$REPO/scripts/hosts" up "$LAB" >/dev/null
  assert_failure 2
  assert_line --regexp "^\[lab\] error: host cli0 \(10\.96\.0\.2\) presents host keys (SHA256:[^ ]+ )+that lab $LAB does not pin \(for cli0: SHA256:[^)]+\); nothing was sent to it\. "
  # Nothing reached any host: no node config, no kit state, no key of cli0 learnt.
  for host in cli0 mon0; do
    run hosts_exec "$host" sh -c 'ls /etc/pfslab/node.json /opt/pfslab/build/'"$LAB"' 2>/dev/null'
    assert_output ""
  done
  [[ ! -e $REPO/build/$LAB/ssh/known_hosts ]] || ! grep -q "^cli0 " "$REPO/build/$LAB/ssh/known_hosts"
}

@test "a host that refuses the lab's key: one line naming it and the key, nothing started" {
  hosts_exec osd1 sh -c 'mv /root/.ssh/authorized_keys /root/.ssh/authorized_keys.away'
  lab_up "lab-up (osd1 refuses the key)"
  hosts_exec osd1 sh -c 'mv /root/.ssh/authorized_keys.away /root/.ssh/authorized_keys'
  assert_failure 2
  assert_line --regexp "^\[lab\] error: host osd1 \(10\.97\.0\.12, through cli0\) refuses the lab's key .*/build/hosts/$LAB/ssh/id_ed25519 for root \(Permission denied\): authorise .*id_ed25519\.pub in ~root/\.ssh/authorized_keys on it, then run 'make lab-up LAB=$LAB' again \(it resumes\)$"
  run hosts_exec mon0 test -e /etc/pfslab/node.json
  assert_failure
}

@test "a host whose sshd is down: one line naming it, what to do" {
  "$REPO/scripts/hosts" stop-sshd "$LAB" osd0
  lab_up "lab-up (osd0's sshd down)"
  "$REPO/scripts/hosts" up "$LAB" >/dev/null
  assert_failure 2
  assert_line "[lab] error: host osd0 (10.97.0.11, through cli0): nothing accepts SSH connections on port 22 (connection refused: its sshd is not running); start sshd on it, then run 'make lab-up LAB=$LAB' again (it resumes)"
}

@test "a host restarted during bring-up is named; lab-up again resumes to HEALTH_OK on separate hosts" {
  local log=$BATS_FILE_TMPDIR/lab-up.log pid
  make -C "$REPO" --no-print-directory lab-up LAB="$LAB" >"$log" 2>&1 &
  pid=$!
  # osd1 restarts while the lab starts its roles (its first OSD step has begun).
  timeout 600 bash -c "until grep -q 'phase [0-9]*: ceph-osd up on osd1' '$log'; do sleep 0.5; done"
  "$REPO/scripts/hosts" restart "$LAB" osd1
  local rc=0
  wait "$pid" || rc=$?
  cat "$log" >&3
  [ "$rc" -eq 2 ]
  run grep -E "^\[(lab|remote)\] error: host osd1 restarted during ceph-osd up \(phase [0-9]+\) \(its SSH connection broke, and it answers again\); run 'make lab-up LAB=$LAB' again \(it resumes\)$" "$log"
  assert_success
  lab_up "lab-up (resumed)"
  echo "$output" >&3
  assert_success
  assert_output --partial "PASS mon0       ceph-cluster"
  assert_output --partial "HEALTH_OK"
  assert_output --partial "login node cli0 reaches every node of lab $LAB"
  # Each host runs its own daemons: the OSDs on the OSD hosts, the MON on mon0 only.
  run hosts_exec osd0 pgrep -x ceph-osd
  assert_success
  run hosts_exec osd0 pgrep -x ceph-mon
  assert_failure
  run hosts_exec mon0 pgrep -x ceph-mon
  assert_success
}

@test "make bench runs on the login host across both client hosts and brings the run home" {
  local run_dir
  run timed "bench" make -C "$REPO" --no-print-directory bench
  echo "$output" >&3
  run_dir=$(ls -d "$REPO/build/runs/$LAB"/*/ | tail -n 1)
  [ -s "$run_dir/report.json" ]
  [ -s "$run_dir/verdict.json" ]
  [ -s "$run_dir/lab.json" ]
  # Launched there: ReFrame's stage is the login host's kit, not this checkout.
  run jq -r '.runs[0].testcases[0].stagedir' "$run_dir/report.json"
  assert_output --regexp "^/opt/pfslab/build/runs/$LAB/"
  # ... launched from this machine, whose checkout the login host's kit is a copy of.
  run jq -r '.launched_from | "\(.host) \(.commit) \(.via)"' "$run_dir/provenance.json"
  assert_output "$(hostname) $(git -C "$REPO" rev-parse HEAD) login node"
  # fio ran one rank on each client host (its hostfile, one output per rank), and
  # IOzone's children on both (its thread list).
  run cat "$run_dir"/output/$LAB/clients/pfslab/Fio_*/nodes.2
  assert_line --regexp "^10\.97\.0\.20( |$)"
  assert_line --regexp "^10\.97\.0\.21( |$)"
  run bash -c "ls '$run_dir'/output/$LAB/clients/pfslab/Fio_*/step1.fio.*.json | wc -l"
  assert_output 2
  run cut -d' ' -f1 "$run_dir"/output/$LAB/clients/pfslab/IOzone_*/threadlist.2
  assert_output "10.97.0.20
10.97.0.21"
  # Nothing of the run is left on the login host.
  run hosts_exec cli0 ls "/opt/pfslab/build/runs/$LAB"
  refute_output --partial "$(basename "$run_dir")"
  # fio and IOzone measured (IOR and mdtest when installed there).
  run jq -r '[.runs[].testcases[] | select(.result == "pass" or .result == "fail") | .name] | join(" ")' "$run_dir/report.json"
  assert_output --partial "fio"
  assert_output --partial "IOzone"
}

# This machine's session following a run on the login host (pfslab/lifecycle/login_run.py,
# follow_once): its ssh (-F CONFIG -n, as the SSH transport orders them), whose command tails the run's console there.
FOLLOW="^ssh .*/build/$LAB/ssh/config( -n)? cli0 d=.*exec tail -c"
run_of() { sed -n 's/^\[bench\] run directory: \([^ ]*\) (launched on login node cli0.*/\1/p' "$1"; }
# Nothing of a run left on the login host: no run directory, no record of a run going.
login_host_clear() {
  run hosts_exec cli0 sh -c "ls -A /opt/pfslab/build/runs/$LAB 2>/dev/null; ls -d /opt/pfslab/build/$LAB/detached 2>/dev/null; true"
  assert_output ""
}

@test "a bench whose SSH session is cut mid-run reattaches; the run comes home, and no second run started" {
  local log=$BATS_FILE_TMPDIR/bench-cut.log pid before run_dir rc=0
  before=$(ls "$REPO/build/runs/$LAB" | wc -l)
  "$REPO/scripts/bench" >"$log" 2>&1 &
  pid=$!
  # The run launched and is followed; ~20 s in, this machine's session is cut.
  timeout 600 bash -c "until pgrep -f -- '$FOLLOW' >/dev/null; do sleep 0.5; done"
  sleep 20
  run pgrep -f -- "$FOLLOW"
  assert_success
  kill -KILL $output
  timed "bench (session cut)" wait "$pid" || rc=$?
  cat "$log" >&3
  run_dir=$(run_of "$log")
  [ -n "$run_dir" ]
  [ -s "$run_dir/report.json" ]
  [ -s "$run_dir/verdict.json" ]
  [ -s "$run_dir/console.log" ]
  run grep -E "^\[bench\] the SSH session following the run on login node cli0 dropped \(exit status [0-9]+\): reattaching, for up to 600 s \(PFSLAB_REATTACH_TIMEOUT\)$" "$log"
  assert_success
  run grep -E "^\[bench\] reattached to run $(basename "$run_dir") on login node cli0: its output resumes at byte [0-9]+$" "$log"
  assert_success
  # One run: launched once, one new run directory here, nothing of it left there.
  assert_equal "$(grep -c 'launching the run on login node' "$log")" 1
  assert_equal "$(ls "$REPO/build/runs/$LAB" | wc -l)" $((before + 1))
  login_host_clear
  # The run's own end decided the status (a verdict), not the cut (2: no report).
  [ "$rc" -ne 2 ]
}

@test "make bench killed mid-run: the run goes on on the login host; make bench again reattaches and brings that run home" {
  local log=$BATS_FILE_TMPDIR/bench-killed.log pid before run_dir
  before=$(ls "$REPO/build/runs/$LAB" | wc -l)
  "$REPO/scripts/bench" >"$log" 2>&1 &
  pid=$!
  timeout 600 bash -c "until pgrep -f -- '$FOLLOW' >/dev/null; do sleep 0.5; done"
  sleep 10
  kill -KILL "$pid"
  wait "$pid" || true
  cat "$log" >&3
  run_dir=$(run_of "$log")
  [ -n "$run_dir" ]
  # The run goes on there without this machine.
  run hosts_exec cli0 cat "/opt/pfslab/build/$LAB/detached/run"
  assert_output "$(basename "$run_dir")"
  run hosts_exec cli0 test -e "/opt/pfslab/build/$LAB/detached/status"
  assert_failure
  run timed "bench (reattached)" "$REPO/scripts/bench"
  echo "$output" >&3
  assert_line --regexp "^\[bench\] a run is going on login node cli0 since [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z: reattaching \(run $(basename "$run_dir")\); Ctrl-C ends it$"
  refute_output --partial "launching the run"
  assert_output --partial "brought the run home from cli0: $run_dir"
  [ -s "$run_dir/report.json" ]
  [ -s "$run_dir/verdict.json" ]
  assert_equal "$(ls "$REPO/build/runs/$LAB" | wc -l)" $((before + 1))
  login_host_clear
}

@test "make report of the run brought home shows the figures measured on the client hosts" {
  run timed "report" make -C "$REPO" --no-print-directory report
  assert_success
  local html
  html=$(grep -oE '/[^ ]*report\.html' <<<"$output" | tail -n 1)
  [ -s "$html" ]
  grep -q "IOzone" "$html"
  grep -qE 'write_iops|read_iops' "$html"
}

@test "a client host that dies during a bench ends the run in one line naming it; what ran before is kept" {
  local log=$BATS_FILE_TMPDIR/bench.log pid run_dir
  PFSLAB_WATCHDOG_INTERVAL=2 make -C "$REPO" --no-print-directory bench >"$log" 2>&1 &
  pid=$!
  # Once fio has finished (its figures are on the login host), cli1 dies during IOzone.
  timeout 600 bash -c "until grep -qE '\) (ok|FAIL) Fio ' '$log'; do sleep 0.5; done"
  sleep 3
  "$REPO/scripts/hosts" poweroff "$LAB" cli1
  local rc=0
  wait "$pid" || rc=$?
  cat "$log" >&3
  [ "$rc" -ne 0 ]
  run grep -E "^\[watchdog\] lab $LAB is unhealthy: cli1: host cli1 stopped answering over SSH \(Connection refused\): bring it back, run 'make lab-up LAB=$LAB', then run the benchmarks again$" "$log"
  assert_success
  run_dir=$(ls -d "$REPO/build/runs/$LAB"/*/ | tail -n 1)
  [ -s "$run_dir/report.json" ]
  run jq -r '.state, .detail' "$run_dir/lab-health.json"
  assert_line unhealthy
  assert_output --partial "cli1"
  # The tests that finished before the fault kept their figures.
  run jq '[.runs[].testcases[] | select(.perfvalues != null and (.perfvalues | length) > 0)] | length' "$run_dir/report.json"
  [ "$output" -ge 1 ]
  "$REPO/scripts/hosts" up "$LAB" >/dev/null
}

@test "lab-down stops the roles and leaves the hosts as it found them" {
  run timed "lab-down" make -C "$REPO" --no-print-directory lab-down
  echo "$output" >&3
  assert_success
  # Every host compared with itself before lab-up: nothing of the lab's is left.
  local host left=""
  for host in $(hosts); do
    host_listing "$host" >"$BATS_FILE_TMPDIR/after-$host"
    left+=$(diff <(comparable "$BATS_FILE_TMPDIR/before-$host") <(comparable "$BATS_FILE_TMPDIR/after-$host") | sed -n "s/^[<>] /$host: &/p")$'\n'
  done
  left=$(sed '/^$/d' <<<"$left")
  echo "${left:-# every host as found}" | head -n 60 >&3
  assert_equal "$left" ""
  # The planted links were neither used nor followed: root's file is untouched, and the
  # links are still there on the hosts that kept their /tmp (a tmpfs: osd1 and cli1 were
  # restarted by the tests above).
  for host in $(hosts); do
    assert_equal "$(hosts_exec "$host" sha1sum /etc/shadow)" "$(cat "$BATS_FILE_TMPDIR/shadow-$host")"
  done
  for host in cli0 mon0 osd0; do
    assert_equal "$(hosts_exec "$host" readlink /tmp/pfslab-hosts /tmp/pfslab-kit-sync.tar.gz | tr '\n' ' ')" "/etc/shadow /etc/shadow "
  done
  for host in mon0 osd0 osd1 cli0 cli1; do
    run hosts_exec "$host" sh -c 'ls /etc/pfslab/node.json /var/lib/pfslab /run/pfslab /etc/profile.d/pfslab.sh /opt/pfslab/build/hosts-cephfs 2>/dev/null; grep -c pfslab-inner /root/.ssh/authorized_keys; grep -c "pfslab hosts of lab" /etc/hosts; ps -eo comm | grep -E "^ceph-(mon|osd|mds|mgr|fuse)$"'
    assert_output "0
0"
  done
  [ ! -e "$REPO/build/$LAB" ]
}

@test "hosts-down leaves nothing of the hosts" {
  run timed "hosts-down" make -C "$REPO" --no-print-directory hosts-down HOSTS="$LAB"
  echo "$output" >&3
  assert_success
  [ ! -e "$REPO/build/hosts/$LAB" ]
  run bash -c "ip netns list | grep -c $(jq -r .instance.netns_prefix <("$REPO/.venv/bin/pfslab" lab show "$LAB" --instance)) || true"
  assert_output 0
}

@test "hosts-down after a hosts-up killed part way, and run twice, leaves nothing" {
  local pid prefix
  prefix=$("$REPO/.venv/bin/pfslab" lab show "$LAB" --instance | jq -r .instance.netns_prefix)
  "$REPO/scripts/hosts" up "$LAB" >"$BATS_FILE_TMPDIR/up-killed.log" 2>&1 &
  pid=$!
  # Killed once some hosts run (the images are cached by now).
  timeout 120 bash -c "until grep -q 'host osd0 is up' '$BATS_FILE_TMPDIR/up-killed.log'; do sleep 0.2; done"
  kill -KILL "$pid"
  wait "$pid" || true
  run "$REPO/scripts/hosts" down "$LAB"
  assert_success
  assert_output --partial "nothing is left"
  run "$REPO/scripts/hosts" down "$LAB"
  assert_success
  run bash -c "ip netns list | grep -c '^$prefix-h' ; losetup -a | grep -c 'build/hosts/$LAB' ; ls '$REPO/build/hosts/$LAB' 2>/dev/null | wc -l"
  assert_output "0
0
0"
}
