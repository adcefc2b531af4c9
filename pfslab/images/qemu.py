"""QEMU on the kit's machine: the accelerator a guest can really use, the CPU model for
it, and how the qemu images boot (their kernel command line)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from pfslab.images import ImageError

#: The label of the images' root file system, and the kernel command line they boot
#: with. scripts/lib/images.sh has the same two (its base image's recipe and cache
#: key); tests/unit/test_images.py keeps them equal.
ROOT_LABEL = "pfslab-root"
KERNEL_APPEND = f"root=LABEL={ROOT_LABEL} ro console=ttyS0 net.ifnames=0"

#: How long the KVM probe waits for the kernel's root-mount panic (a working KVM
#: reaches it in a few seconds).
_PROBE_SECONDS = 30.0


def require_cmd(*commands: str) -> None:
    for cmd in commands:
        if shutil.which(cmd) is None:
            raise ImageError(f"missing command '{cmd}'; run 'make deps' first")


def cpu_model(accel: str) -> str:
    """The host's CPU under KVM, everything TCG emulates (SSE4.2, AVX2...) otherwise."""
    return "host" if accel == "kvm" else "max"


def cpus() -> int:
    """What ``nproc`` prints: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def _probe_kvm(kernel: Path) -> str:
    """kvm when a guest really runs under KVM: a usable-looking /dev/kvm can still fail
    on the first instructions (nested virtualisation without the features QEMU wants), so
    the kernel boots until it panics for want of a root file system."""
    verdict = "tcg"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serial.log"
        err = Path(tmp) / "qemu.err"
        log.touch()
        with err.open("wb") as err_stream:
            vm = subprocess.Popen(
                ["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults", "-display",
                 "none", "-no-reboot", "-serial", f"file:{log}", "-kernel", str(kernel),
                 "-append", "console=ttyS0 panic=-1 root=/dev/nonexistent"],
                stdin=subprocess.DEVNULL, stdout=err_stream, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + _PROBE_SECONDS
            while vm.poll() is None and time.monotonic() < deadline:
                if b"Kernel panic" in log.read_bytes():
                    break
                if any(word in f.read_bytes() for f in (log, err)
                       for word in (b"KVM internal error", b"emulation failure")):
                    break
                time.sleep(0.5)
            if b"Kernel panic" in log.read_bytes():
                verdict = "kvm"
            if vm.poll() is None:
                vm.send_signal(signal.SIGTERM)
            vm.wait()
    return verdict


def accelerator(kernel: Path) -> str:
    """kvm when /dev/kvm can really run a guest, else tcg; PFSLAB_QEMU_ACCEL=kvm|tcg
    skips the probe."""
    forced = os.environ.get("PFSLAB_QEMU_ACCEL", "")
    if forced in ("kvm", "tcg"):
        return forced
    if forced:
        raise ImageError(f"PFSLAB_QEMU_ACCEL='{forced}' is not kvm or tcg")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    return _probe_kvm(kernel)
