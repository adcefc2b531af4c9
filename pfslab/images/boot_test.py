"""Boot a qemu image the way a node first boots it, and prove cloud-init finishes
(scripts/image-boot-test IMAGE [USER_DATA]).

The VM boots an overlay (the image stays pristine) with the image's kernel, a NoCloud
seed ISO, user-mode networking and its serial console in a log file; KVM when it can run
a guest here, TCG otherwise. The test's user-data writes a marker, runs the common role
(``up tuning`` then ``health tuning``, no network needed) and, once
/var/lib/cloud/instance/boot-finished exists, prints one line with a per-run nonce on
the console: cloud-init's status and error count, the marker, the role's health. Exit 0
when all are good, 1 when the boot or a check fails, 2 on bad input.
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
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pfslab.images import ImageError, images_dir, kit_root, qemu, relative

USAGE = "usage: image-boot-test IMAGE [USER_DATA]"


class BootFailed(Exception):
    """The boot or a check failed (not bad input): one FAIL line, exit 1."""


class _Stopped(Exception):
    """INT or TERM: the VM is stopped and the work removed, exit 130."""


def _tag() -> str:
    return os.environ.get("PFSLAB_LOG_TAG") or "image-boot-test"


def log(message: str) -> None:
    print(f"[{_tag()}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Image:
    directory: Path
    disk: Path
    kernel: Path
    initrd: Path
    append: str


def _nonempty(path: Path) -> bool:
    """The shell's ``-s``: there, and not empty."""
    return path.exists() and path.stat().st_size > 0


def resolve_image(arg: str) -> Image:
    """The image directory `make images TARGET=qemu` wrote, or its .qcow2."""
    given = Path(arg)
    if not given.exists():
        raise ImageError(f"no image at {arg}; build one with 'make images TARGET=qemu ROLE=server'")
    if given.is_dir():
        directory = Path(os.path.abspath(arg))
        manifest = directory / "image.json"
        if not _nonempty(manifest):
            raise ImageError(f"{arg} has no image.json; is it a directory 'make images TARGET=qemu' wrote?")
        disk_name = _read_json(manifest).get("disk")
        if not isinstance(disk_name, str) or not disk_name:
            raise ImageError(f"{manifest} names no disk (.disk); is it a directory 'make images TARGET=qemu' wrote?")
        disk = directory / disk_name
    else:
        if not arg.endswith(".qcow2"):
            raise ImageError(f"{arg} is not an image directory or a .qcow2")
        disk = Path(os.path.abspath(arg))
        directory = disk.parent
        manifest = directory / "image.json"
    if not _nonempty(disk):
        raise ImageError(f"the image's disk {disk} is missing")
    kernel, initrd = directory / "vmlinuz", directory / "initrd"
    if not (_nonempty(kernel) and _nonempty(initrd)):
        raise ImageError(f"no vmlinuz/initrd beside {disk} (the image boots its kernel directly)")
    append = qemu.KERNEL_APPEND
    if _nonempty(manifest):
        given_append = _read_json(manifest).get("kernel_append")
        if given_append is not None and given_append is not False:
            append = given_append if isinstance(given_append, str) else json.dumps(given_append)
    return Image(directory, disk, kernel, initrd, append)


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ImageError(f"{path} is not JSON ({err})") from None
    if not isinstance(data, dict):
        raise ImageError(f"{path} is not a JSON object")
    return data


def user_data_type(path: str) -> str:
    """The content type of a user-data file (named as given) for a MIME part."""
    with open(path, "rb") as stream:
        first = stream.readline()
    if first.startswith(b"#cloud-config"):
        return "cloud-config"
    if first.startswith(b"#!"):
        return "x-shellscript"
    raise ImageError(f"{path} is neither #cloud-config nor a #! script; cloud-init would ignore it")


def _schema(path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cloud-init", "schema", "--config-file", path], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)


def check_user_data(path: str) -> None:
    """A lab's rendered user-data (named as given): readable and valid for this cloud-init."""
    if not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise ImageError(f"no user-data at {path} (scripts/render-user-data writes build/user-data/<lab>/<node>.yaml)")
    if user_data_type(path) != "cloud-config":
        return
    qemu.require_cmd("cloud-init")
    checked = _schema(path)
    if checked.returncode != 0:
        said = checked.stdout.rstrip("\n").replace("\n", " ")
        raise ImageError(f"{path} is not valid cloud-config: {said} ")
    log(f"user-data {path}: valid cloud-config (cloud-init schema)")


def node_config() -> str:
    """The test's node config: the common role's tuning on a VM of the baremetal target."""
    config = {
        "lab": "image-boot-test", "target": "baremetal", "machine_kind": "host",
        "node": {"name": "pfslab-boot-test", "group": "test", "index": 0, "address": "10.0.2.15", "roles": []},
        "filesystem": {"type": "none", "mount": "/mnt/pfslab"},
        "os_tuning": {"sysctl": {"vm.swappiness": 10, "vm.dirty_background_ratio": 5},
                      "transparent_hugepages": "madvise"},
        "network": {"subnet": "10.0.2.0/24", "fabric": "ethernet"},
        "cluster": {"first": {}},
        "paths": {"state": "/var/lib/pfslab", "run": "/run/pfslab", "log": "/var/log/pfslab",
                  "cluster": "/etc/pfslab/cluster", "mount": "/mnt/pfslab"},
    }
    return json.dumps(config, separators=(",", ":"))


# The report runs as its own systemd unit: it must outlive cloud-final, which writes
# boot-finished after runcmd.
_TEST_USER_DATA = """#cloud-config
# pfslab image boot test, run @NONCE@
merge_how:
  - name: list
    settings: [append]
  - name: dict
    settings: [no_replace, recurse_list]
locale: "false"
write_files:
  - path: /etc/pfslab/node.json
    permissions: "0644"
    content: '@NODE@'
  - path: /usr/local/sbin/pfslab-boot-report
    permissions: "0755"
    content: |
      #!/bin/bash
      # Wait for cloud-init's end, then one line on the console for scripts/image-boot-test.
      for _ in $(seq 1 1800); do [ -e /var/lib/cloud/instance/boot-finished ] && break; sleep 1; done
      for _ in $(seq 1 120); do [ -s /run/cloud-init/result.json ] && break; sleep 1; done
      finished=no; [ -e /var/lib/cloud/instance/boot-finished ] && finished=yes
      errors=$(jq '.v1.errors | length' /run/cloud-init/result.json 2>/dev/null || echo unknown)
      status=$(cloud-init status 2>/dev/null | sed -n 's/^status: //p')
      marker=no; [ "$(cat /var/lib/pfslab-boot-test.marker 2>/dev/null)" = "@NONCE@" ] && marker=yes
      health=$(tail -n 1 /var/log/pfslab-boot-test.log 2>/dev/null | tr ' ' '_')
      digest=$(jq -r '.digest // "none"' /etc/pfslab/image.json 2>/dev/null || echo none)
      installed=$(jq -r '.installed // [] | map(gsub(" "; ":")) | join(",")' /etc/pfslab/image.json 2>/dev/null)
      runcmd=$(grep -c '^' /var/lib/cloud/instance/scripts/runcmd 2>/dev/null || echo 0)
      echo "PFSLAB-BOOT-RESULT @NONCE@ boot_finished=$finished status=$status errors=$errors marker=$marker health=$health digest=$digest installed=$installed runcmd_lines=$runcmd" >/dev/console
runcmd:
  - [sh, -c, "echo @NONCE@ > /var/lib/pfslab-boot-test.marker"]
  - [sh, -c, "export PFSLAB_NODE_CONFIG=/etc/pfslab/node.json; /opt/pfslab/scripts/roles/common up tuning >/var/log/pfslab-boot-test.log 2>&1; /opt/pfslab/scripts/roles/common health tuning >>/var/log/pfslab-boot-test.log 2>&1 || echo health-failed >>/var/log/pfslab-boot-test.log"]
  - [systemd-run, --no-block, --unit=pfslab-boot-report, /usr/local/sbin/pfslab-boot-report]
"""


def test_user_data(nonce: str) -> str:
    """The test's cloud-config for one run."""
    return _TEST_USER_DATA.replace("@NODE@", node_config()).replace("@NONCE@", nonce)


def iso_tool() -> list[str]:
    """The command making the seed ISO from OUT USER_DATA META_DATA (prefix; see make_seed)."""
    for tool in ("genisoimage", "xorriso", "cloud-localds"):
        if shutil.which(tool):
            return [tool]
    raise ImageError("missing an ISO tool for the NoCloud seed (genisoimage, xorriso or cloud-localds); "
                     "run 'make deps' first")


def make_seed(work: Path, nonce: str, lab_user_data: str | None) -> Path:
    """The seed ISO (label cidata): the test's part, after the lab's user-data if given."""
    seed = work / "seed"
    seed.mkdir(parents=True, exist_ok=True)
    test = work / "test.yaml"
    test.write_text(test_user_data(nonce))
    if shutil.which("cloud-init"):
        checked = _schema(str(test))
        if checked.returncode != 0:
            last = checked.stdout.rstrip("\n").split("\n")[-1]
            raise ImageError(f"the test's own user-data is not valid cloud-config ({last})")
    user_data, meta_data = seed / "user-data", seed / "meta-data"
    if lab_user_data is not None:
        with user_data.open("wb") as out:
            subprocess.run(["cloud-init", "devel", "make-mime", "-a",
                            f"{lab_user_data}:{user_data_type(lab_user_data)}", "-a", f"{test}:cloud-config"],
                           stdout=out, check=True)
    else:
        shutil.copyfile(test, user_data)
    meta_data.write_text(f"instance-id: pfslab-boot-test-{nonce}\nlocal-hostname: pfslab-boot-test\n")
    iso = work / "seed.iso"
    tool = iso_tool()[0]
    if tool == "genisoimage":
        cmd = ["genisoimage", "-quiet", "-output", str(iso), "-volid", "cidata", "-joliet", "-rock",
               str(user_data), str(meta_data)]
    elif tool == "xorriso":
        cmd = ["xorriso", "-as", "mkisofs", "-quiet", "-o", str(iso), "-V", "cidata", "-J", "-r",
               str(user_data), str(meta_data)]
    else:
        cmd = ["cloud-localds", str(iso), str(user_data), str(meta_data)]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL if tool == "xorriso" else None)
    return iso


def start_vm(image: Image, work: Path, accel: str, serial: Path) -> subprocess.Popen[bytes]:
    overlay = work / "overlay.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(image.disk), str(overlay)],
                   check=True)
    with (work / "qemu.out").open("wb") as out:
        return subprocess.Popen(
            ["qemu-system-x86_64", "-accel", accel, "-cpu", qemu.cpu_model(accel),
             "-m", os.environ.get("PFSLAB_BOOT_MEMORY") or "2048", "-smp", str(qemu.cpus()),
             "-nographic", "-monitor", "none", "-serial", f"file:{serial}", "-no-reboot",
             "-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", image.append,
             "-drive", f"file={overlay},if=virtio,format=qcow2",
             "-drive", f"file={work / 'seed.iso'},media=cdrom,format=raw,readonly=on",
             "-nic", "user,model=virtio-net-pci"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def _tail(path: Path, lines: int) -> list[str]:
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return []
    return text.rstrip("\n").split("\n")[-lines:] if text else []


def wait_result(vm: subprocess.Popen[bytes], work: Path, serial: Path, nonce: str, timeout: float) -> str | None:
    """The result line, or None on timeout or a VM that stopped (said on stderr)."""
    start = time.monotonic()
    marker = f"PFSLAB-BOOT-RESULT {nonce}".encode()
    while time.monotonic() - start < timeout:
        try:
            found = [line for line in serial.read_bytes().split(b"\n") if marker in line]
        except OSError:
            found = []
        if found:
            return found[-1].replace(b"\r", b"").decode(errors="replace")
        if vm.poll() is not None:
            log("the VM stopped before cloud-init finished: "
                + "".join(f"{line} " for line in _tail(work / "qemu.out", 3)))
            return None
        time.sleep(2)
    log(f"no result within {timeout:g}s; last console lines:")
    for line in _tail(serial, 15):
        print(line.replace("\r", ""), file=sys.stderr)
    return None


def field(name: str, line: str) -> str:
    """The last NAME=VALUE of the result line."""
    found = re.match(rf".* {re.escape(name)}=([^ ]*)", line)
    return found.group(1) if found else ""


def stop_vm(vm: subprocess.Popen[bytes]) -> None:
    if vm.poll() is not None:
        return
    vm.terminate()
    try:
        vm.wait(timeout=5)
    except subprocess.TimeoutExpired:
        vm.kill()
        vm.wait()


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped()


def _timeout(accel: str) -> float:
    raw = os.environ.get("PFSLAB_BOOT_TIMEOUT") or ("300" if accel == "kvm" else "900")
    if not raw.isdigit():
        raise ImageError(f"PFSLAB_BOOT_TIMEOUT='{raw}' is not a number of seconds")
    return float(raw)


def boot_test(args: Sequence[str]) -> int:
    """scripts/image-boot-test IMAGE [USER_DATA]; an :class:`ImageError` on bad input,
    :class:`BootFailed` when the boot or a check fails."""
    if not 1 <= len(args) <= 2:
        raise ImageError(USAGE)
    qemu.require_cmd("qemu-system-x86_64", "qemu-img")
    iso_tool()
    image = resolve_image(args[0])
    # The user-data as given: messages name it so.
    lab_arg = args[1] if len(args) == 2 else ""
    lab_user_data = lab_arg or None
    if lab_user_data is not None:
        check_user_data(lab_user_data)
    images_dir().mkdir(parents=True, exist_ok=True)
    vm: subprocess.Popen[bytes] | None = None
    work = Path(tempfile.mkdtemp(prefix=".boot-test.", dir=images_dir()))
    serial = work / "serial.log"
    nonce = os.urandom(8).hex()
    keep_log = images_dir() / "logs" / f"{image.directory.name}.boot-{nonce}.serial.log"
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        make_seed(work, nonce, lab_user_data)
        accel = qemu.accelerator(image.kernel)
        timeout = _timeout(accel)
        log(f"booting {image.disk.name} with {accel} (overlay; timeout {timeout:g}s; "
            f"console log {relative(keep_log)})")
        start = time.monotonic()
        vm = start_vm(image, work, accel, serial)
        line = wait_result(vm, work, serial, nonce, timeout)
        if line is None:
            raise BootFailed(f"no boot-finished after {int(time.monotonic() - start)}s")
        status, errors, marker = field("status", line), field("errors", line), field("marker", line)
        health = field("health", line).replace("_", " ")
        print(f"boot-finished after {int(time.monotonic() - start)}s ({accel}): cloud-init status={status} "
              f"errors={errors} marker={marker}")
        print(f"common health tuning: {health}")
        print(f"image: digest={field('digest', line)} installed={field('installed', line)}")
        print(f"user-data: {lab_arg or 'only the test part'}; runcmd script lines: "
              f"{field('runcmd_lines', line)}", flush=True)
        if not (status == "done" and errors == "0" and marker == "yes" and ": ok " in health):
            raise BootFailed(f"cloud-init or the role check failed (console log: {relative(keep_log)})")
        return 0
    except _Stopped:
        return 130
    finally:
        if vm is not None:
            stop_vm(vm)
        if _nonempty(serial):
            keep_log.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(serial, keep_log)
        shutil.rmtree(work, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(args: Sequence[str]) -> int:
    try:
        return boot_test(args)
    except ImageError as err:
        print(f"[{_tag()}] error: {err}", file=sys.stderr, flush=True)
        return 2
    except BootFailed as err:
        print(f"[{_tag()}] FAIL: {err}", file=sys.stderr, flush=True)
        return 1
