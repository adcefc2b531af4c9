#!/usr/bin/env bash
# Packer, last step: what every machine booted from the image must not share or
# inherit. cloud-init runs again on the first boot (new host keys, users, network),
# systemd makes a new machine id, and the build's login key is gone.
set -euo pipefail

main() {
  apt-get clean 2>/dev/null || true
  rm -rf /var/lib/apt/lists/* /tmp/pfslab-* /var/tmp/*
  if command -v cloud-init >/dev/null 2>&1; then
    cloud-init clean --logs --seed
  fi
  rm -f /etc/ssh/ssh_host_*
  # The build's host name in /etc/hosts goes; a node's cloud-init writes its own.
  printf '%s\n' '127.0.0.1	localhost' '::1		localhost ip6-localhost ip6-loopback' \
    'ff02::1		ip6-allnodes' 'ff02::2		ip6-allrouters' >/etc/hosts
  truncate -s 0 /etc/machine-id
  rm -f /var/lib/dbus/machine-id
  # The key Packer logged in with (a one-off key; the user stays for the shutdown, whose
  # command removes the qemu build account and its sudo rule: targets/baremetal/image.pkr.hcl).
  if [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
    rm -f "$(getent passwd "$SUDO_USER" | cut -d: -f6)/.ssh/authorized_keys"
  fi
  sync
  echo "cleanup: cloud-init state, host keys, machine id and the build key removed"
}

main "$@"
