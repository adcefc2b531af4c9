"""Root file systems for the hosts, built with the kit's own image recipe: an mmdebstrap
base, then the provisioning scripts Packer runs (packer/builds.pkr.hcl), in its order,
with the environment it gives them, run in a chroot. Layered like qcow2 backing files:
the base directory, each image an overlay upper over it, each host's own upper on top
(its "disk"). Cached under build/host-images/ by digest: a second hosts-up with the same
kit builds nothing."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT, registry
from pfslab.hosts import TAG, CommandFailed, HostsRefusal, kit_images
from pfslab.lifecycle import log

#: What only a VM needs (a kernel and initramfs to boot, udev, systemd as PID 1, DHCP on
#: ifupdown): a host here shares this machine's kernel and gets its address from
#: pfslab/hosts/machine.py.
VM_ONLY_PACKAGES = frozenset({"linux-image-cloud-amd64", "initramfs-tools", "systemd-sysv", "udev", "dbus",
                              "ifupdown", "isc-dhcp-client", "cloud-guest-utils"})
#: tini stands in for the init system: PID 1 of each host reaps the orphans the roles'
#: daemons leave when they double-fork.
HOST_EXTRA_PACKAGES = ("tini",)
#: The Packer source whose steps the hosts' images run (the qemu builder's).
QEMU_SOURCE = "qemu.debian"
#: Where a step runs in the chroot, as on a VM Packer provisions.
STEP_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: How this machine reaches package registries, handed to the build's steps only.
ACCESS_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "PIP_INDEX_URL",
               "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")


def overlay_options(lowers: Sequence[Path | str], upper: Path, work: Path) -> str:
    """An overlay's mount options: ``lowers`` top first (a host: its image over the base;
    an image's build: the base), ``upper`` the layer written to (a host's disk, the
    image being built)."""
    return f"lowerdir={':'.join(str(p) for p in lowers)},upperdir={upper},workdir={work}"


def images_dir(root: Path = KIT_ROOT) -> Path:
    return root / "build" / "host-images"


# ---- the base ------------------------------------------------------------------------

def base_packages(recipe: kit_images.BaseRecipe) -> list[str]:
    """The VM base's packages less what only a VM needs, plus an init for PID 1."""
    return [p for p in recipe.packages if p not in VM_ONLY_PACKAGES] + list(HOST_EXTRA_PACKAGES)


def _digest(lines: Sequence[str]) -> str:
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def base_digest(recipe: kit_images.BaseRecipe) -> str:
    """The base's cache key: its recipe and the code that builds it."""
    return _digest([recipe.suite, recipe.mirror, recipe.security, *base_packages(recipe),
                    inspect.getsource(build_base)])


def build_base(root: Path = KIT_ROOT) -> Path:
    """build/host-images/base-<digest16>/root, made once."""
    recipe = kit_images.base_recipe(root)
    top = images_dir(root)
    done = top / f"base-{base_digest(recipe)[:16]}"
    if (done / ".done").exists():
        log(TAG, f"base root file system {done} reused")
        return done / "root"
    require_cmd("mmdebstrap")
    start = time.monotonic()
    top.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".base.", dir=top))
    packages = base_packages(recipe)
    log(TAG, f"building the base root file system (mmdebstrap {recipe.suite}, minbase + {len(packages)} packages)")
    with open(tmp / "mmdebstrap.log", "wb") as out:
        status = subprocess.call(
            ["mmdebstrap", "--mode=root", "--variant=minbase", f"--include={','.join(packages)}", recipe.suite,
             str(tmp / "root"), f"deb {recipe.mirror} {recipe.suite} main",
             f"deb {recipe.mirror} {recipe.suite}-updates main",
             f"deb {recipe.security} {recipe.suite}-security main"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    if status != 0:
        _tail(tmp / "mmdebstrap.log", 5)
        shutil.rmtree(tmp, ignore_errors=True)
        raise HostsRefusal("mmdebstrap failed (the last lines are above)")
    shutil.rmtree(done, ignore_errors=True)
    tmp.rename(done)
    (done / ".done").touch()
    log(TAG, f"base root file system built in {int(time.monotonic() - start)} s ({_size_mb(done / 'root')} MB)")
    return done / "root"


# ---- the recipe --------------------------------------------------------------------------

_BLOCK = re.compile(r'^  provisioner "shell" \{\n(.*?)^  \}', re.M | re.S)
_SCRIPT = re.compile(r'^    script *=.*packer/scripts/([^"]*)"', re.M)
_ONLY = re.compile(r"^    only *=(.*)$", re.M)


def recipe_steps(template: Path) -> list[str]:
    """The shell provisioners of packer/builds.pkr.hcl that the qemu builder runs, in order
    (those without ``only``, or whose ``only`` names it): the script names. Read from the
    template itself, so the hosts' images follow the recipe as it changes."""
    steps = []
    for block in _BLOCK.findall(template.read_text()):
        script = _SCRIPT.search(block)
        only = _ONLY.search(block)
        if script and (only is None or QEMU_SOURCE in only.group(1)):
            steps.append(script.group(1))
    return steps


def image_components(family: str, role: str) -> list[str]:
    """The components a role's image installs: the family's non-client roles (server) or
    its client roles (client), as packer/locals.pkr.hcl decides."""
    client = role == "client"
    return [r.component for fam in registry.families().values() if fam.family == family
            for r in fam.roles if r.client == client]


def step_env(step: str, role: str, family: str, digest: str, target: str, components: Sequence[str],
             built_at: str) -> list[str]:
    """The environment builds.pkr.hcl gives a step on the qemu builder (toolchain: distro on
    client images, the login node's benchmarks and the kit's Python environment)."""
    toolchain = "distro" if role == "client" else "off"
    if step == "install-kit.sh":
        image = {"role": role, "family": family, "components": list(components), "digest": digest,
                 "builder": "hosts", "target": target, "built_at": built_at, "toolchain": toolchain != "off"}
        return [f"PFSLAB_IMAGE_JSON={json.dumps(image, separators=(',', ':'))}"]
    if step == "install-roles.sh":
        return [f"PFSLAB_FAMILY={family}", f"PFSLAB_COMPONENTS={' '.join(components)}", "PFSLAB_FABRIC=ethernet",
                f"PFSLAB_TARGET={target}", "PFSLAB_FS_SETTINGS={}"]
    if step == "toolchain.sh":
        return [f"PFSLAB_TOOLCHAIN={toolchain}", f"PFSLAB_FAMILY={family}"]
    return []


# ---- an image --------------------------------------------------------------------------

def image_key(kit: str, role: str, family: str, base: Path, steps: Sequence[str]) -> str:
    """An image's cache key: the kit, its role and family, its base, the recipe's steps and
    the code that builds it."""
    code = "".join(inspect.getsource(f) for f in (build_image, step_env, provision))
    return _digest([kit, role, family, str(base), " ".join(steps), code])


def build_image(role: str, family: str, base: Path, target: str, root: Path = KIT_ROOT) -> Path:
    """build/host-images/<role>-<family>-<digest16>/upper: the image's files over the base."""
    start = time.monotonic()
    kit = kit_images.image_digest(root)
    steps = recipe_steps(root / "packer" / "builds.pkr.hcl")
    top = images_dir(root)
    done = top / f"{role}-{family}-{image_key(kit, role, family, base, steps)[:16]}"
    if (done / ".done").exists():
        log(TAG, f"{role} image {done} reused (kit {kit[:12]})")
        return done / "upper"
    top.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{role}.", dir=top))
    for sub in ("upper", "work", "merged"):
        (tmp / sub).mkdir()
    kit_images.kit_archive(tmp / "kit.tar.gz", root)
    log(TAG, f"building the {role} image of family {family}: {' '.join(steps)} (kit {kit[:12]})")
    # A private mount namespace: whatever happens, no mount of the build outlives it.
    argv = ["unshare", "--mount", "--propagation", "private", "--",
            *self_command("_provision", str(base), str(tmp), role, family, kit, target, *steps)]
    with open(tmp / "build.log", "wb") as out:
        status = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PFSLAB_ROOT": str(root)})
    if status != 0:
        failed = top / f"{role}-{family}-failed.log"
        _tail(tmp / "build.log", 15)
        shutil.copyfile(tmp / "build.log", failed)
        shutil.rmtree(tmp, ignore_errors=True)
        raise HostsRefusal(f"building the {role} image failed (last lines above; whole log: {failed})")
    for sub in ("work", "merged"):
        shutil.rmtree(tmp / sub)
    (tmp / "kit.tar.gz").unlink()
    shutil.rmtree(done, ignore_errors=True)
    tmp.rename(done)
    (done / ".done").touch()
    log(TAG, f"{role} image built in {int(time.monotonic() - start)} s ({_size_mb(done / 'upper')} MB over the base)")
    return done / "upper"


def provision(base: Path, tmp: Path, role: str, family: str, kit: str, target: str, steps: Sequence[str],
              root: Path = KIT_ROOT) -> int:
    """Inside the build's mount namespace: the overlay, what apt in a chroot needs, the kit
    archive where Packer's file provisioner puts it, then each step with its environment.
    Its output is the build's log; its status 1 when a step failed."""
    m = tmp / "merged"
    _run(["mount", "-t", "overlay", "overlay", "-o", overlay_options([base], tmp / "upper", tmp / "work"), str(m)])
    _run(["mount", "-t", "proc", "proc", f"{m}/proc"])
    _run(["mount", "--rbind", "/dev", f"{m}/dev"])
    _run(["mount", "-t", "tmpfs", "tmpfs", f"{m}/tmp"])
    _run(["mount", "-t", "tmpfs", "tmpfs", f"{m}/run"])
    shutil.copyfile("/etc/resolv.conf", m / "run/resolv.conf")
    if subprocess.call(["mount", "--bind", f"{m}/run/resolv.conf", f"{m}/etc/resolv.conf"],
                       stderr=subprocess.DEVNULL) != 0:
        shutil.copyfile("/etc/resolv.conf", m / "etc/resolv.conf")
    # Package scripts must not start daemons in the image: the roles start their own.
    policy = m / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    shutil.copyfile(tmp / "kit.tar.gz", m / "tmp/pfslab-kit.tar.gz")
    # How this machine reaches package registries (a proxy, its CA), for the build only
    # (the build's /tmp; nothing of it stays in the image); its pip cache as a cache.
    access = [f"{var}={os.environ[var]}" for var in ACCESS_VARS if os.environ.get(var)]
    ca = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE") or os.environ.get("REQUESTS_CA_BUNDLE") or ""
    if ca and Path(ca).is_file():
        shutil.copyfile(ca, m / "tmp/build-ca.pem")
        access.append("PIP_CERT=/tmp/build-ca.pem")
    pip_cache = m / "root/.cache/pip"
    if Path("/root/.cache/pip").is_dir():
        pip_cache.mkdir(parents=True, exist_ok=True)
        _run(["mount", "--bind", "/root/.cache/pip", str(pip_cache)])
    components = image_components(family, role)
    built_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for step in steps:
        shutil.copyfile(root / "packer/scripts" / step, m / "tmp" / step)
        envs = step_env(step, role, family, kit, target, components, built_at)
        print(f"=== {step} {' '.join(envs)}", flush=True)
        status = subprocess.call(["chroot", str(m), "/usr/bin/env", "-i", STEP_PATH, "HOME=/root", "LANG=C.UTF-8",
                                  *access, *envs, "bash", f"/tmp/{step}"], stdin=subprocess.DEVNULL)
        if status != 0:
            print(f"step {step} failed", flush=True)
            return 1
    if subprocess.call(["umount", str(pip_cache)], stderr=subprocess.DEVNULL) == 0:
        for d in (pip_cache, pip_cache.parent):
            try:
                d.rmdir()
            except OSError:
                pass
    policy.unlink(missing_ok=True)
    subprocess.call(["umount", f"{m}/etc/resolv.conf"], stderr=subprocess.DEVNULL)
    (m / "etc/resolv.conf").write_text("")
    return 0


# ---- helpers -------------------------------------------------------------------------------

def self_command(*args: str) -> list[str]:
    """``pfslab hosts ARGS...`` with this interpreter (the kit's environment), wherever it runs."""
    return [sys.executable, "-c", "import sys; from pfslab.cli import main; sys.exit(main())", "hosts", *args]


def require_cmd(*commands: str) -> None:
    for cmd in commands:
        if shutil.which(cmd) is None:
            raise HostsRefusal(f"missing command '{cmd}'; run 'make deps' first")


def _run(argv: list[str]) -> None:
    status = subprocess.call(argv)
    if status != 0:
        raise CommandFailed(argv, status)


def _tail(path: Path, lines: int) -> None:
    text = path.read_text(errors="replace").splitlines()[-lines:]
    if text:
        print("\n".join(text), file=sys.stderr, flush=True)


def _size_mb(path: Path) -> str:
    return subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=False).stdout.split("\t")[0]
