#!/usr/bin/env bats
# scripts/hosts without starting anything: its input checks (the image recipe it follows,
# read from packer/builds.pkr.hcl: tests/unit/test_hosts.py; the real hosts: tests/remote,
# make test-remote).

load helpers

setup() { :; }

@test "hosts: a missing or unknown lab, or a lab without hosts, is one line naming the labs with hosts" {
  run "$KIT/scripts/hosts" up
  assert_failure 2
  assert_output "[hosts] error: HOSTS is not set; give the lab whose hosts to start: HOSTS=<lab> (labs with hosts: hosts-cephfs)"
  run "$KIT/scripts/hosts" up nope
  assert_failure 2
  assert_output --regexp "^\[hosts\] error: lab 'nope' cannot be used: .*\(labs with hosts: hosts-cephfs\)$"
  run "$KIT/scripts/hosts" up local
  assert_failure 2
  assert_output "[hosts] error: lab 'local' has no existing hosts (target baremetal, targets.baremetal.hosts); labs with hosts: hosts-cephfs"
  run "$KIT/scripts/hosts" start hosts-cephfs
  assert_failure 2
  assert_output "[hosts] error: action 'start' is not one of up, down, status, exec, stop-sshd, restart, poweroff"
  run "$KIT/scripts/hosts" restart hosts-cephfs nohost
  assert_failure 2
  assert_output "[hosts] error: host 'nohost' is not a host of lab hosts-cephfs; its hosts: mon0 osd0 osd1 cli0 cli1"
}
