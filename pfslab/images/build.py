"""Build the server and client images with Packer: the work behind `make images`
(scripts/images TARGET [ROLE]).

TARGET qemu builds Debian 12 qcow2 images here (KVM when it works, else TCG) into
build/images/pfslab-<role>-<family>-<digest12>/ from the Debian base scripts/lib/images.sh
builds (its recipe and cache key stay there, with the base's shell code); every other
target whose adapter names a Packer source (target_packer_source) builds in its cloud,
after the adapter's credential check. Every image carries the kit at /opt/pfslab and is
tagged with the kit's digest (:mod:`pfslab.images.kit`); Packer gets the template
directory :mod:`pfslab.images.templates` assembles.

Environment: FAMILY (default ceph), FORCE=1, TOOLCHAIN=auto|on|off, PACKER_VARS="k=v ...",
PFSLAB_QEMU_ACCEL=kvm|tcg, PFSLAB_IMAGES_DIR (default <kit>/build/images).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from pfslab.images import ImageError, images_dir, kit, kit_root, qemu, relative, templates
from pfslab.spackstep.step import sha256_file

TAG = "images"
ROLES = ("server", "client", "all")


class _Exit(Exception):
    """A shell step already said why (its own one line): exit with its status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def log(message: str) -> None:
    print(f"[{TAG}] {message}", file=sys.stderr, flush=True)


def image_targets(root: Path) -> list[str]:
    """What Packer builds for: qemu (local and bare-metal images), and every target whose
    adapter (targets/<target>/adapter.sh) names its Packer source (target_packer_source)."""
    found = ["qemu"]
    for adapter in sorted((root / "targets").glob("*/adapter.sh"), key=lambda p: os.fsencode(p.parent.name)):
        if re.search(r"^target_packer_source\(\)", adapter.read_text(), re.MULTILINE):
            found.append(adapter.parent.name)
    return found


def usage(root: Path) -> str:
    return f"usage: scripts/images {'|'.join(image_targets(root))} [server|client|all]"


def families(root: Path) -> list[str]:
    names = []
    for path in (root / "families").glob("*/family.json"):
        family = json.loads(path.read_text()).get("family")
        names.append(family if isinstance(family, str) else json.dumps(family))
    return sorted(names, key=os.fsencode)


@dataclass
class Build:
    """One run: its settings, its kit, its scratch directory."""

    target: str
    roles: list[str]
    family: str
    toolchain: str
    force: bool
    extra_vars: list[str]
    work: Path
    start: float = field(default_factory=time.monotonic)
    digest: str = ""
    archive: Path = Path()
    template_dir: Path | None = None

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.start)
        return f"{s // 60}m{s % 60:02d}s"


def check_args(root: Path, target: str, role: str, family: str, toolchain: str) -> None:
    if not target:
        raise ImageError(f"no TARGET given; {usage(root)}")
    targets = image_targets(root)
    if target not in targets:
        raise ImageError(f"unknown TARGET '{target}': one of {', '.join(targets)} ({usage(root)})")
    if role not in ROLES:
        raise ImageError(f"unknown ROLE '{role}': one of server, client, all ({usage(root)})")
    known = families(root)
    if family not in known:
        raise ImageError(f"unknown FAMILY '{family}': one of {', '.join(known)} (families/*/family.json)")
    if toolchain not in ("auto", "on", "off"):
        raise ImageError(f"TOOLCHAIN='{toolchain}' is not auto, on or off")


def _shell(root: Path, lines: str, *args: str, capture: bool = False) -> str:
    """Run kit shell (common.sh and images.sh sourced, its log tag ours): its refusal is
    its own line, and its status ours."""
    script = (f'source "$0/scripts/lib/common.sh"; source "$0/scripts/lib/images.sh"; PFSLAB_LOG_TAG={TAG}; '
              f"set -euo pipefail; {lines}")
    done = subprocess.run(["bash", "-c", script, str(root), *args], stdout=subprocess.PIPE if capture else None,
                          text=True, check=False)
    if done.returncode != 0:
        raise _Exit(done.returncode)
    return done.stdout if capture else ""


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise ImageError(f"{what} needs root (it creates network namespaces, mounts and daemons); "
                         "run it as root or with sudo")


# ---- packer ------------------------------------------------------------------------------

def run_packer(build: Build, only: str, logfile: Path, variables: Sequence[str]) -> None:
    """packer build of one image, its output in LOGFILE too."""
    args: list[str] = []
    for v in [*variables, *build.extra_vars]:
        args += ["-var", v]
    if build.force:
        args.append("-force")
    if build.template_dir is None:
        build.template_dir = build.work / "templates"
        templates.packer_templates(kit_root(), build.template_dir)
    logfile.parent.mkdir(parents=True, exist_ok=True)
    log(f"packer build -only={only} (log: {relative(logfile)})")
    env = dict(os.environ, PACKER_CACHE_DIR=str(images_dir() / "packer_cache"))
    with logfile.open("wb") as saved:
        packer = subprocess.Popen(["packer", "build", "-color=false", f"-only={only}", *args, str(build.template_dir)],
                                  cwd=kit_root(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert packer.stdout is not None
        for line in packer.stdout:
            saved.write(line)
            saved.flush()
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
        status = packer.wait()
    if status != 0:
        raise ImageError(f"packer build -only={only} failed after {build.elapsed()}; see {relative(logfile)}")


def common_vars(build: Build) -> list[str]:
    """Variables every target gets."""
    return [f"kit_root={kit_root()}", f"kit_archive={build.archive}", f"image_digest={build.digest}",
            f"family={build.family}", f"toolchain={build.toolchain}"]


def prepare_kit(build: Build) -> None:
    root = kit_root()
    build.digest = kit.image_digest(root)
    build.archive = images_dir() / f"kit-{build.digest[:12]}.tar.gz"
    images_dir().mkdir(parents=True, exist_ok=True)
    if not (build.archive.exists() and build.archive.stat().st_size > 0):
        kit.kit_archive(root, build.archive)
    log(f"kit digest {build.digest} ({len(kit.image_files(root))} files; archive {relative(build.archive)})")


# ---- qemu ---------------------------------------------------------------------------------

_BUILD_USER_DATA = """#cloud-config
# pfslab image build (@NAME@): a login for Packer with a key made for this build
# (deleted with the build's temporary directory; cleanup.sh removes it from the image,
# and Packer's shutdown command the account and its sudo rule).
# The base has no locales; "false" (a string, as the schema wants) skips the module.
locale: "false"
# sudo resolves the host name; cleanup.sh puts back Debian's plain /etc/hosts.
manage_etc_hosts: localhost
ssh_pwauth: false
disable_root: true
users:
  - name: pfslab-build
    gecos: pfslab image build
    shell: /bin/bash
    sudo: "ALL=(ALL) NOPASSWD:ALL"
    lock_passwd: true
    ssh_authorized_keys:
      - @KEY@
growpart:
  mode: auto
  devices: ["/"]
resize_rootfs: true
"""


def build_user_data(name: str, public_key: str) -> str:
    """The build's cloud-config: a sudo user for Packer with the key made for it."""
    return _BUILD_USER_DATA.replace("@NAME@", name).replace("@KEY@", public_key.rstrip("\n"))


def write_build_seed(directory: Path, name: str) -> None:
    """The build's NoCloud seed: a sudo user for Packer with a key made for this build."""
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"pfslab-build@{name}", "-f", str(key)],
                   check=True)
    public = Path(f"{key}.pub")
    (directory / "user-data").write_text(build_user_data(name, public.read_text() if public.exists() else ""))
    (directory / "meta-data").write_text(f"instance-id: {name}-{int(time.time())}\nlocal-hostname: pfslab-build\n")
    if shutil.which("cloud-init"):
        checked = subprocess.run(["cloud-init", "schema", "--config-file", str(directory / "user-data")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if checked.returncode != 0:
            raise ImageError("the build's user-data is not valid cloud-config "
                             f"(cloud-init schema --config-file {directory / 'user-data'})")


def is_kernel(path: Path) -> bool:
    """True for an x86 Linux kernel image (bzImage: "HdrS" at offset 0x202)."""
    if not (path.exists() and path.stat().st_size > 0):
        return False
    with path.open("rb") as stream:
        stream.seek(0x202)
        return stream.read(4) == b"HdrS"


def qemu_image_json(build: Build, name: str, role: str, base: Path, accel: str, seconds: int) -> str:
    """The facts of a qemu image, beside its disk (image.json; /etc/pfslab/image.json inside)."""
    version = subprocess.run(["packer", "version"], stdout=subprocess.PIPE, text=True, check=False).stdout
    facts = {"name": name, "role": role, "family": build.family, "digest": build.digest, "base": base.name,
             "disk": f"{name}.qcow2", "kernel": "vmlinuz", "initrd": "initrd", "kernel_append": qemu.KERNEL_APPEND,
             "accelerator": accel, "build_seconds": seconds, "packer": version.split("\n")[0]}
    return json.dumps(facts, indent=2, ensure_ascii=False) + "\n"


def _base_files(base: Path) -> tuple[Path, Path]:
    stem = str(base)[:-len(".qcow2")] if str(base).endswith(".qcow2") else str(base)
    return Path(f"{stem}.vmlinuz"), Path(f"{stem}.initrd")


def build_qemu(build: Build, role: str, base: Path) -> None:
    start = time.monotonic()
    name = f"pfslab-{role}-{build.family}-{build.digest[:12]}"
    out = images_dir() / name
    disk = out / f"{name}.qcow2"
    if disk.exists() and disk.stat().st_size > 0 and not build.force:
        log(f"{name} is up to date ({relative(out)}); FORCE=1 rebuilds it")
        print(disk, flush=True)
        return
    kernel, initrd = _base_files(base)
    accel = qemu.accelerator(kernel)
    if accel == "tcg":
        log(f"building {name} with TCG (software emulation: KVM is absent or cannot run a guest here)")
    else:
        log(f"building {name} with KVM")
    seed = build.work / f"seed-{role}"
    write_build_seed(seed, name)
    staging = images_dir() / f".staging-{name}"
    shutil.rmtree(staging, ignore_errors=True)
    checksum = sha256_file(base)
    logs = images_dir() / "logs"
    run_packer(build, "image.qemu.debian", logs / f"{name}.packer.log", [
        *common_vars(build), f"role={role}", f"qemu_base_image={base}", f"qemu_base_checksum=sha256:{checksum}",
        f"qemu_kernel={kernel}", f"qemu_initrd={initrd}", f"qemu_kernel_append={qemu.KERNEL_APPEND}",
        f"qemu_seed_dir={seed}", f"qemu_ssh_private_key_file={seed / 'id_ed25519'}",
        f"qemu_accelerator={accel}", f"qemu_cpu_model={qemu.cpu_model(accel)}", f"qemu_cpus={qemu.cpus()}",
        f"qemu_output_dir={staging}", f"qemu_serial_log={logs / f'{name}.serial.log'}"])
    built = staging / f"{name}.qcow2"
    if not (built.exists() and built.stat().st_size > 0):
        raise ImageError(f"packer finished but {built} is missing")
    # The image's own kernel and initramfs, which Packer downloaded.
    if not is_kernel(staging / "vmlinuz"):
        raise ImageError(f"{staging / 'vmlinuz'} is not a Linux kernel (the download from the image failed)")
    if not ((staging / "initrd").exists() and (staging / "initrd").stat().st_size > 0):
        raise ImageError(f"{staging / 'initrd'} is missing (the download from the image failed)")
    (staging / "image.json").write_text(qemu_image_json(build, name, role, base, accel, int(time.monotonic() - start)))
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    log(f"built {name} in {int(time.monotonic() - start)}s with {accel}: {relative(out)}/{name}.qcow2")
    print(disk, flush=True)


def qemu_images(build: Build) -> None:
    qemu.require_cmd("packer", "qemu-system-x86_64", "qemu-img", "ssh-keygen")
    if not (shutil.which("genisoimage") or shutil.which("xorriso")):
        raise ImageError("missing an ISO tool for the NoCloud seed (genisoimage or xorriso); run 'make deps' first")
    prepare_kit(build)
    # The Debian base: its recipe, cache key and builder are scripts/lib/images.sh's.
    base = Path(_shell(kit_root(), "build_base", capture=True).rstrip("\n").split("\n")[-1])
    for role in build.roles:
        build_qemu(build, role, base)


# ---- clouds -------------------------------------------------------------------------------

def cloud_images(build: Build) -> None:
    root = kit_root()
    # The target's adapter names its Packer source and login variables.
    source = _shell(root, 'use_target "$1"; target_packer_source', build.target, capture=True).strip()
    login = _shell(root, 'use_target "$1"; if declare -F target_packer_vars >/dev/null; then '
                   'target_packer_vars || true; fi', build.target, capture=True).splitlines()
    qemu.require_cmd("packer")
    prepare_kit(build)
    for role in build.roles:
        logfile = images_dir() / "logs" / f"pfslab-{role}-{build.family}-{build.digest[:12]}.{build.target}.packer.log"
        run_packer(build, f"image.{source}", logfile, [*common_vars(build), f"role={role}", *login])
        log(f"built the {build.target} {role} image (digest {build.digest[:12]}) after {build.elapsed()}")


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped()


def images(args: Sequence[str]) -> None:
    root = kit_root()
    start = time.monotonic()
    if len(args) > 2:
        raise ImageError(f"too many arguments; {usage(root)}")
    target = args[0] if args else ""
    role = args[1] if len(args) > 1 and args[1] else "all"
    family = os.environ.get("FAMILY") or "ceph"
    toolchain = os.environ.get("TOOLCHAIN") or "auto"
    check_args(root, target, role, family, toolchain)
    if target == "qemu":
        require_root("building qemu images (mmdebstrap --mode=root)")
    else:
        # The same credential check as make lab-up's: the target's adapter.
        _shell(root, 'use_target "$1"; target_credentials "" "scripts/images $1" "nothing was built"', target)
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    work = Path(tempfile.mkdtemp())
    try:
        build = Build(target=target, roles=["server", "client"] if role == "all" else [role], family=family,
                      toolchain=toolchain, force=os.environ.get("FORCE", "0") == "1",
                      extra_vars=(os.environ.get("PACKER_VARS") or "").split(), work=work, start=start)
        if target == "qemu":
            qemu_images(build)
        else:
            cloud_images(build)
        log(f"done in {build.elapsed()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(args: Sequence[str]) -> int:
    try:
        images(args)
    except ImageError as err:
        print(f"[{TAG}] error: {err}", file=sys.stderr, flush=True)
        return 2
    except _Exit as err:
        return err.status
    except _Stopped:
        return 130
    return 0
