#!/usr/bin/env bats
# scripts/hosts without starting anything: its input checks, and the image recipe it
# follows read from packer/builds.pkr.hcl (the real hosts: tests/remote, make test-remote).

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

# The steps and their environment, from the template as Packer reads it: every shell
# provisioner with a script, in order, with the names of the environment variables it
# passes; hosts-images.sh must run the qemu builder's steps with the same names.
@test "hosts' images run packer/builds.pkr.hcl's provisioning steps in its order, with its environment" {
  run python3 - "$KIT/packer/builds.pkr.hcl" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r'\n  provisioner "shell" \{\n(.*?)\n  \}', text, re.S):
    script = re.search(r'script\s*=\s*"[^"]*/packer/scripts/([^"]+)"', block)
    if not script:
        continue
    only = re.search(r'only\s*=\s*\[([^\]]*)\]', block)
    if only and "qemu.debian" not in only.group(1):
        continue
    names = sorted(set(re.findall(r'"(PFSLAB_[A-Z_]+)=', block)))
    print(" ".join([script.group(1), *names]))
PY
  assert_success
  expected=$output
  run bash -c "cd '$KIT' && source scripts/lib/common.sh && source scripts/lib/images.sh && source scripts/lib/hosts-images.sh &&
    for s in \$(image_recipe_steps); do echo \"\$s \$(image_step_env \$s client ceph 0 | cut -d= -f1 | sort -u | paste -sd' ')\" | sed 's/ \$//'; done"
  assert_success
  assert_equal "$output" "$expected"
  # The qemu builder's steps, the VM-only ones (EFA) left out.
  assert_equal "$(cut -d' ' -f1 <<<"$output" | paste -sd' ')" "wait-cloud-init.sh install-kit.sh install-roles.sh toolchain.sh cleanup.sh"
}

@test "hosts' base: the VM base's packages less what only a VM needs, plus an init for PID 1" {
  run bash -c "cd '$KIT' && source scripts/lib/common.sh && source scripts/lib/images.sh && source scripts/lib/hosts-images.sh && host_base_packages"
  assert_success
  assert_line openssh-server
  assert_line cloud-init
  assert_line tini
  refute_line linux-image-cloud-amd64
  refute_line systemd-sysv
}
