"""A cloud or bare-metal lab's bring-up after ``terraform apply``, over SSH."""

from __future__ import annotations

from pfslab.lifecycle.adapter import Shell
from pfslab.lifecycle.labstate import Command


def remote_up(lab: str, shell: Shell) -> None:
    shell.call("remote_up", lab)


def login_calibrate(cmd: Command, lab: str, force: bool = False) -> None:
    Shell("", cmd.kit.root).call("login_calibrate", lab, *(["force"] if force else []))


def hosts_down(cmd: Command, lab: str) -> None:
    """Existing hosts outlive the lab: its bench and what a run left ended, its roles
    stopped, and what it wrote on them removed."""
    shell = Shell("", cmd.kit.root)
    if not (cmd.kit.state_dir(lab) / "ssh" / "config").is_file():
        shell.call("remote_ssh_config", lab)
    shell.call("remote_stop_bench", lab)
    shell.call("remote_end_lab_processes", lab)
    if shell.run("remote_phases", lab, "down") != 0:
        shell.call("log", "could not stop every role on the existing hosts (ignored)")
    shell.call("login_forget", lab)


def remote_preflight(cmd: Command, lab: str) -> int:
    """scripts/preflight on a remote lab (lab-status), its SSH config written if missing."""
    return Shell("", cmd.kit.root).run("remote_preflight", lab)
