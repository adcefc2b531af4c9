"""Install what the kit needs on Debian/Ubuntu: the work behind ``make deps``.

    scripts/deps [PROFILE...]     demo | test | images | tools | login | all (default: all)

demo: what a lab and its benchmarks need (benchmarks, MPI, Ceph for the local lab, the
      kit's Python environment .venv from requirements.lock); ``make demo`` installs only this.
test: what ``make test`` adds (bats, shellcheck, Packer, cloud-init, a headless browser for
      the report test, requirements-dev.lock).
tools: what ``make tools`` needs to build IOR, mdtest and IO500 from source against the
      system's Open MPI (test adds it: make test builds them when a mirror is there).
images: what ``make images`` adds (mmdebstrap, QEMU, ISO tools, Packer, cloud-init).
login: a client image's login side (packer/scripts/toolchain.sh, toolchain=distro): the
      distribution's benchmarks and .venv, so the node can run ReFrame for its lab.

The Python packages come from hash-locked files (scripts/lock-python makes them from the
pinned requirements*.txt); pip installs them with --require-hashes. It says what it does;
run it again and it changes nothing.

Standard library only: it runs on the system's python3, before .venv exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, require_root, stamp_matches
from pfslab.spackstep.step import sha256_file

TOOL = Tool("deps")
NONFREE_SOURCE = Path("/etc/apt/sources.list.d/pfslab-non-free.sources")

# Benchmarks and MPI (LAMMPS is Debian's), the local lab's Ceph, the kit's own tools.
# The benchmarks a node that launches or runs them needs, from the distribution (no
# Spack): the local lab's host, and client images built with toolchain=distro.
BENCH_PACKAGES = ("openmpi-bin", "fio", "iozone3", "lammps")
# A lab's scheduler (scripts/roles/slurm): the local lab with Slurm, and its bats test.
SLURM_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
DEMO_PACKAGES = (*BENCH_PACKAGES, *SLURM_PACKAGES,
                 "ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph-common",
                 "jq", "iproute2", "util-linux", "psmisc", "git", "python3-venv")
TEST_PACKAGES = ("bats", "bats-assert", "bats-support", "shellcheck", *SLURM_PACKAGES,
                 "packer", "cloud-init", "openssh-client", "xfsprogs", "chromium")
TOOLS_PACKAGES = ("git", "build-essential", "libopenmpi-dev", "autoconf", "automake", "libtool", "pkg-config")
IMAGE_PACKAGES = ("packer", "cloud-init", "openssh-client",
                  "mmdebstrap", "qemu-system-x86", "qemu-utils", "xorriso", "genisoimage", "nftables")

PROFILES = ("demo", "test", "images", "tools", "login", "all")
#: What each profile runs, in order (a step once per profile that names it).
STEPS: dict[str, tuple[str, ...]] = {
    "demo": ("demo",),
    "test": ("demo", "test"),
    "images": ("demo", "images"),
    "tools": ("tools",),
    "login": ("login",),
    "all": ("demo", "test", "images"),
}

ACTIVATE_MARKER = "# pfslab: the kit and the running lab"


def steps(profiles: Sequence[str]) -> list[str]:
    """The steps of the profiles given (none: all), each profile checked before any runs."""
    chosen = list(profiles) or ["all"]
    for profile in chosen:
        if profile not in STEPS:
            raise Refusal(f"profile '{profile}' is not one of {', '.join(PROFILES)}")
    return [step for profile in chosen for step in STEPS[profile]]


def run(cmd: Sequence[str], env: dict[str, str] | None = None) -> int:
    """A command whose output goes to stderr (stdout stays data); its exit status."""
    return subprocess.run(list(cmd), stdout=sys.stderr, env=env).returncode


def output(cmd: Sequence[str]) -> str:
    """A command's stdout (empty when it cannot run), stderr discarded."""
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True).stdout
    except OSError:
        return ""


def is_installed(package: str) -> bool:
    return output(["dpkg-query", "-W", "-f=${Status}", package]) == "install ok installed"


def os_release() -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in Path("/etc/os-release").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key] = value.strip().strip('"')
    return fields


def nonfree_source(codename: str) -> str:
    return ("Types: deb\nURIs: http://deb.debian.org/debian\n"
            f"Suites: {codename}\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")


def ensure_nonfree() -> None:
    """IOzone is in Debian's non-free component; add it (once) only when it is needed."""
    if is_installed("iozone3") or NONFREE_SOURCE.exists():
        return
    release = os_release()
    if release.get("ID") != "debian":  # Ubuntu ships iozone3 in multiverse
        return
    TOOL.log(f"adding Debian's non-free component for iozone3 ({NONFREE_SOURCE})")
    NONFREE_SOURCE.write_text(nonfree_source(release.get("VERSION_CODENAME", "")))
    if run(["apt-get", "update", "-q"]) != 0:
        raise Refusal(f"apt-get update failed (above) after adding {NONFREE_SOURCE}")


def apt_install(packages: Sequence[str]) -> None:
    """Install the packages (scripts/lib/pkg.sh's pkg_install on apt): once more after an
    ``apt-get update`` when the first try fails (stale package lists)."""
    TOOL.log(f"installing {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", *packages]
    if run(cmd, env) == 0:
        return
    if run(["apt-get", "update", "-q"]) != 0 or run(cmd, env) != 0:
        raise Refusal(f"apt-get install {' '.join(packages)} failed (above)")


def ensure_packages(packages: Sequence[str]) -> None:
    missing = [p for p in packages if not is_installed(p)]
    if not missing:
        TOOL.log(f"system packages: all {len(packages)} present")
        return
    ensure_nonfree()
    apt_install(missing)


def ensure_terraform() -> None:
    if shutil.which("terraform") is None:
        raise Refusal("terraform is missing; install Terraform >= 1.6 (https://developer.hashicorp.com/terraform/install) "
                      "and run 'make deps' again")
    TOOL.log(f"terraform: {first_line(output(['terraform', 'version']))}")


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


class Venv:
    """The kit's Python environment, .venv, and the stamps saying what is in it."""

    def __init__(self, root: Path = KIT_ROOT) -> None:
        self.root = root
        self.path = root / ".venv"

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

    def ensure(self) -> None:
        if not os.access(self.bin("python"), os.X_OK):
            python = venv_python()
            TOOL.log(f"creating the python environment {self.path} with {python}")
            if subprocess.run([python, "-m", "venv", str(self.path)]).returncode != 0:
                raise Refusal(f"{python} -m venv {self.path} failed (above); install python3-venv")
        self.requirements(self.root / "requirements.lock")
        self.kit_package()

    def requirements(self, lock: Path) -> None:
        """Install a lock file (every package, transitive ones too, pinned with its sha256
        hashes) unless the stamp says it is there. --require-hashes: pip refuses any file
        whose hash the lock does not list, and any package the lock does not name."""
        stamp, want = self.path / f".pfslab-{lock.name}.sha256", sha256_file(lock)
        if stamp_matches(stamp, want):
            TOOL.log(f"python environment: {lock.name} up to date")
            return
        TOOL.log(f"installing {lock.name} into {self.path} (hash-checked)")
        if run([str(self.bin("pip")), "install", "-q", "--disable-pip-version-check", "--require-hashes",
                "-r", str(lock)]) != 0:
            raise Refusal(f"pip install --require-hashes -r {lock.name} failed (above); a hash mismatch means the "
                          "download is not the file the lock was made from")
        stamp.write_text(want + "\n")

    def package_hash(self) -> str:
        """What the kit's package install depends on: pyproject.toml and the checkout's path."""
        data = (self.root / "pyproject.toml").read_bytes() + f"{self.root}\n".encode()
        return hashlib.sha256(data).hexdigest()

    def kit_package(self) -> None:
        """The kit's own package and its ``pfslab`` command, editable: this checkout is the
        code that runs. Installed again when pyproject.toml changes or the command points
        elsewhere. --no-build-isolation: built with the setuptools the lock put into .venv
        (requirements-build.txt), not one pip would fetch unhashed for an isolated build."""
        stamp, want = self.path / ".pfslab-package.sha256", self.package_hash()
        if stamp_matches(stamp, want) and os.access(self.bin("pfslab"), os.X_OK):
            TOOL.log("python environment: the kit's package up to date")
            return
        TOOL.log(f"installing the kit's package (pfslab/, editable) into {self.path}")
        if run([str(self.bin("pip")), "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
                "-e", str(self.root)]) != 0:
            raise Refusal(f"pip install -e {self.root} failed (above)")
        stamp.write_text(want + "\n")

    def activate_hook(self) -> None:
        """``source .venv/bin/activate`` then points ReFrame at the kit's configuration
        (with no lab up it selects the ``nolab`` system, whose one test says which lab to
        bring up), and at the running lab once ``make lab-up`` has written build/env.sh."""
        activate = self.bin("activate")
        text = activate.read_text()
        hooked = hook_text(text, self.root)
        if hooked != text:
            TOOL.log(f"making {activate} point ReFrame at the kit (and at the running lab)")
            activate.write_text(hooked)


def hook_text(activate: str, root: Path) -> str:
    """The activate script with the kit's hook; an older kit's hook (another configuration
    path) is replaced, not added to."""
    config = root / "reframe" / "config" / "settings.py"
    if ACTIVATE_MARKER in activate and f"RFM_CONFIG_FILES='{config}'" in activate:
        return activate
    lines = activate.splitlines(keepends=True)
    if ACTIVATE_MARKER + "\n" in lines:
        lines = lines[:lines.index(ACTIVATE_MARKER + "\n")]
    return "".join(lines) + (f"\n{ACTIVATE_MARKER}\nexport PFSLAB_ROOT='{root}'\nexport RFM_CONFIG_FILES='{config}'\n"
                             f"if [ -f '{root}/build/env.sh' ]; then . '{root}/build/env.sh'; fi\n")


def venv_python() -> str:
    """The system's Python (the python3-venv package) when there is one: an interpreter
    under a home directory (pyenv's, in root's 700 home) would make .venv unusable for the
    ordinary user a site lab runs as. PFSLAB_PYTHON chooses another."""
    if os.environ.get("PFSLAB_PYTHON"):
        return os.environ["PFSLAB_PYTHON"]
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3"
    return shutil.which("python3") or "python3"


def ready_line(venv: Venv) -> str:
    """The versions of what the demo runs, as one line."""
    iozone = re.findall(r"Revision: ([0-9.]*)", output(["iozone", "-v"]))
    ceph = " ".join(output(["ceph", "--version"]).split(" ")[:3]).strip()
    lammps = output(["dpkg-query", "-W", "-f=${Version}", "lammps"]).split(".")[0]
    return (f"ready: iozone {iozone[0] if iozone else ''}, {output(['fio', '--version']).strip()}, {ceph}, "
            f"LAMMPS {lammps}, reframe {output([str(venv.bin('reframe')), '--version']).strip()}")


def run_step(step: str, venv: Venv) -> None:
    if step == "demo":
        ensure_packages(DEMO_PACKAGES)
        ensure_terraform()
        venv.ensure()
        venv.activate_hook()
        TOOL.log(ready_line(venv))
    elif step == "test":
        ensure_packages((*TEST_PACKAGES, *TOOLS_PACKAGES))
        venv.requirements(venv.root / "requirements-dev.lock")
    elif step == "images":
        ensure_packages(IMAGE_PACKAGES)
    elif step == "tools":
        ensure_packages(TOOLS_PACKAGES)
    else:  # login
        ensure_packages((*BENCH_PACKAGES, "python3-venv", "jq", "openssh-client"))
        venv.ensure()


def body(argv: list[str]) -> int:
    todo = steps(argv)
    require_root("make deps (it installs system packages)")
    if shutil.which("apt-get") is None:
        raise Refusal("make deps supports Debian and Ubuntu (apt); install the packages listed in pfslab/dev/deps.py "
                      "by hand elsewhere")
    venv = Venv()
    for step in todo:
        run_step(step, venv)
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
