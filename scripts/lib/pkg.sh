# shellcheck shell=bash
# Package installation for role `install` steps: one function for every role and
# every image (Packer, cloud-init, `make deps`), so package logic is written once.

# True when a Debian package is installed (dpkg's status, read whole: no pipe to grep -q).
is_installed() {
  [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# Install Debian/Ubuntu or RHEL-family packages that are not yet installed.
# Prints what it installs; prints nothing and changes nothing when all are present.
pkg_install() {
  local missing=() pkg
  if command -v dpkg-query >/dev/null 2>&1; then
    for pkg in "$@"; do
      is_installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; }
  elif command -v rpm >/dev/null 2>&1; then
    for pkg in "$@"; do
      rpm -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    dnf install -y -q "${missing[@]}" >&2
  else
    die "no supported package manager (apt or dnf) on this node"
  fi
}
