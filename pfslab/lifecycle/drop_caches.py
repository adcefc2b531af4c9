"""Drop the OS page, dentry and inode caches on every node of the running lab, as the
seeds did between runs and between write and read ("sync && echo 3 >
/proc/sys/vm/drop_caches" on clients and servers). Job scripts call it (scripts/drop-caches)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pfslab.lifecycle import Refusal, build_dir, check_lab_name, inventory_at
from pfslab.transport.ssh import SshTransport

TAG = "drop-caches"
COMMAND = "sync && echo 3 > /proc/sys/vm/drop_caches"
DROP_FILE = Path("/proc/sys/vm/drop_caches")


def the_lab(given: str | None) -> str:
    """LAB, else $PFSLAB_LAB, else the active lab (build/active-lab)."""
    lab = given or os.environ.get("PFSLAB_LAB") or ""
    if not lab:
        active = build_dir() / "active-lab"
        lab = active.read_text().strip() if active.is_file() else ""
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first")
    check_lab_name(lab)
    return lab


def drop_here() -> None:
    os.sync()
    DROP_FILE.write_text("3\n")


def main(given: str | None) -> int:
    from pfslab.lifecycle import login_run
    from pfslab.lifecycle.remote_up import Remote

    lab = the_lab(given)
    path = build_dir() / lab / "inventory.json"
    if not path.is_file() or not path.stat().st_size:
        raise Refusal(f"lab {lab} is not up (no {path})")
    inventory = inventory_at(path)
    if inventory.registry_target().namespaces:
        # Every node of the local lab shares this host's kernel: one drop covers all.
        drop_here()
        return 0
    config = build_dir() / lab / "ssh" / "config"
    if not config.is_file() or not config.stat().st_size:
        Remote(lab, login_run.tag()).write_ssh_config()
    # Through the lab's own SSH config, every node at once.
    transport = SshTransport(config)
    children = [subprocess.Popen(transport.shell_argv(node.name, COMMAND), stdin=subprocess.DEVNULL)
                for node in inventory.nodes]
    failed = sum(1 for child in children if child.wait() != 0)
    if failed:
        raise Refusal(f"could not drop caches on {failed} node(s) of lab {lab}")
    return 0
