"""An EC2 API emulator on this machine, for the kit's cloud tests (make test-cloud):

    scripts/cloud-emulator start    start it on 127.0.0.1; its endpoint URL is the last line
    scripts/cloud-emulator stop     end it (nothing of it is left but its log)
    scripts/cloud-emulator status   its URL and pid, or exit 1 when none runs

moto's server (requirements-emulator.lock, in build/cloud-emulator/venv) plus what the kit
adds for the EC2 calls moto lacks (tests/emulator/ec2_emulator.py: placement groups,
instance monitoring, interfaces that outlive their instance), with an AMI registered for
each image name of the kit's AWS labs. Point a lab at it with
  PFSLAB_AWS_ENDPOINT=<url> AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing make lab-up LAB=aws-cephfs
It listens on loopback only and holds its state in memory: stopping it forgets everything
it was told.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, ensure_locked_venv

TOOL = Tool("cloud-emulator")
#: The target whose labs the emulator serves (its API is EC2's).
EMULATED = "aws"
SCRIPT = "ec2_emulator.py"


class Paths:
    def __init__(self, root: Path = KIT_ROOT) -> None:
        self.root = root
        self.dir = root / "build" / "cloud-emulator"
        self.venv = self.dir / "venv"
        self.lock = root / "requirements-emulator.lock"
        self.pid = self.dir / "pid"
        self.url = self.dir / "url"
        self.log = self.dir / "emulator.log"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_pid(paths: Paths) -> int | None:
    """The emulator's pid when it runs (its pid file's process, running the emulator)."""
    try:
        text = paths.pid.read_text().strip()
        if not re.fullmatch(r"[0-9]+", text) or not alive(int(text)):
            return None
        if SCRIPT.encode() not in Path(f"/proc/{text}/cmdline").read_bytes():
            return None
    except OSError:
        return None
    return int(text)


def image_args(resolved: Iterable[dict[str, Any]]) -> list[str]:
    """The emulator's arguments: every region and image name of the labs as lab-up resolves
    them for the emulated target (an image name's first * becomes "emulator")."""
    sections = [s for lab in resolved if (s := (lab.get("targets") or {}).get(EMULATED)) and s.get("images")]
    args: list[str] = []
    for region in sorted({s["region"] for s in sections}):
        args += ["--region", region]
    for name in sorted({image["name"] for s in sections for image in values(s["images"])}):
        args += ["--image-name", name.replace("*", "emulator", 1)]
    return args


def values(collection: dict[str, Any] | list[Any]) -> list[Any]:
    """A JSON object's values or an array's items (jq's ``.[]``)."""
    return list(collection.values()) if isinstance(collection, dict) else list(collection)


def resolved_labs() -> list[dict[str, Any]]:
    """Every lab as lab-up resolves it for the emulated target (``pfslab lab export``)."""
    from pfslab import labexport

    with tempfile.TemporaryDirectory() as tmp:
        labexport.export(Path(tmp))
        return [json.loads(p.read_text()) for p in sorted(Path(tmp).glob(f"*@{EMULATED}.json"))]


def start(paths: Paths) -> int:
    pid = running_pid(paths)
    if pid is not None:
        TOOL.log(f"already running (pid {pid})")
        print(paths.url.read_text(), end="")
        return 0
    paths.dir.mkdir(parents=True, exist_ok=True)
    ensure_locked_venv(TOOL, paths.venv, paths.lock, "moto")
    args = image_args(resolved_labs())
    paths.url.unlink(missing_ok=True)
    with paths.log.open("w") as log:
        # A session of its own: it outlives this command and the terminal's signals.
        child = subprocess.Popen([str(paths.venv / "bin" / "python"), str(paths.root / "tests" / "emulator" / SCRIPT),
                                  "--ready-file", str(paths.url), *args],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    paths.pid.write_text(f"{child.pid}\n")
    deadline = time.monotonic() + 30
    while not (paths.url.is_file() and paths.url.stat().st_size > 0):
        if child.poll() is not None:
            sys.stderr.write("".join(paths.log.read_text(errors="replace").splitlines(keepends=True)[-20:]))
            raise Refusal(f"the emulator stopped while starting; its log is {paths.log}")
        if time.monotonic() > deadline:
            raise Refusal(f"the emulator did not answer within 30 s; its log is {paths.log}")
        time.sleep(0.1)
    url = paths.url.read_text()
    TOOL.log(f"EC2 API emulator (pid {child.pid}) with AMIs {args.count('--image-name')} image name(s); log {paths.log}")
    TOOL.log(f"use it: PFSLAB_AWS_ENDPOINT={url.strip()} AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing "
             "make lab-up LAB=aws-cephfs")
    print(url, end="")
    return 0


def stop(paths: Paths) -> int:
    pid = running_pid(paths)
    if pid is None:
        paths.pid.unlink(missing_ok=True)
        paths.url.unlink(missing_ok=True)
        TOOL.log("no emulator is running")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(pid) and not reaped(pid):
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        time.sleep(0.1)
    paths.pid.unlink(missing_ok=True)
    paths.url.unlink(missing_ok=True)
    TOOL.log(f"stopped (pid {pid}); everything it held is gone")
    return 0


def reaped(pid: int) -> bool:
    """A zombie (ended, waiting for its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def status(paths: Paths) -> int:
    pid = running_pid(paths)
    if pid is None:
        TOOL.log("no emulator is running")
        return 1
    print(f"pid {pid}")
    print(paths.url.read_text(), end="")
    return 0


ACTIONS = {"start": start, "stop": stop, "status": status}


def body(argv: list[str]) -> int:
    action = argv[0] if argv else ""
    if action not in ACTIONS:
        raise Refusal(f"action '{action}' is not one of start, stop, status")
    return ACTIONS[action](Paths())


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
