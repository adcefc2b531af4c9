"""Why ssh to a remote lab's node failed, in one line with what to do (``pfslab lab
diagnose LAB NODE``, scripts/lib/remote.sh's remote_diagnose, and the phases' "lost"
line): read from ssh's own messages and the lab's inventory, never guessed."""

from __future__ import annotations

import re
from pathlib import Path

from pfslab.model import Inventory


def diagnose(lab: str, inventory: Inventory, node: str, output: str, ssh_dir: Path) -> str:
    """One line for ssh's ``output`` (its messages as a command substitution keeps them:
    trailing newlines dropped). ``ssh_dir`` is build/<lab>/ssh."""
    out = output.rstrip("\n")
    entry = next((n for n in inventory.nodes if n.name == node), None)
    addr = "" if entry is None else entry.ssh_address or entry.address
    jump = "" if entry is None else entry.ssh_jump
    key = inventory.ssh_key or f"{ssh_dir}/id_ed25519"
    user = inventory.ssh_user or "root"
    where = f"host {node} ({addr}{', through ' + jump if jump else ''})"
    again = f"then run 'make lab-up LAB={lab}' again (it resumes)"

    def has(*words: str) -> bool:
        return any(w in out for w in words)

    if has("REMOTE HOST IDENTIFICATION HAS CHANGED", "Host key verification failed"):
        # Never "remove the old key": that trusts whichever machine answers now. The
        # user compares fingerprints through a channel ssh does not go through.
        seen = re.search(r"SHA256:[A-Za-z0-9+/=]*", out)
        known = ssh_dir / "known_hosts"
        return (f"{where}: its SSH host key{f' ({seen.group(0)})' if seen else ''} is not the one recorded in {known}, "
                "so nothing was sent to it (a reinstalled host, or another machine at that address); do not remove "
                "the recorded key on trust: compare, on the host's own console, 'ssh-keygen -lf "
                "/etc/ssh/ssh_host_ed25519_key.pub' with the key ssh was shown, and only if they match replace "
                f"{node}'s line in {known}, {again}")
    if has("Permission denied"):
        return (f"{where} refuses the lab's key {key} for {user} (Permission denied): authorise {key}.pub in "
                f"~{user}/.ssh/authorized_keys on it, {again}")
    if has("timed out", "No route to host", "Network is unreachable", "Could not resolve"):
        return (f"{where} does not answer ({out.rsplit(': ', 1)[-1]}): is it powered on and on the network? "
                f"Bring it back, {again}")
    if has("Connection refused", "connect failed", "open failed"):
        return (f"{where}: nothing accepts SSH connections on port 22 (connection refused: its sshd is not "
                f"running); start sshd on it, {again}")
    if has("closed by", "Connection reset", "Broken pipe", "timeout"):
        return f"{where} closed the SSH connection (restarting or shutting down?); when it answers again, {again}"
    return f"{where} cannot be reached over SSH ({out.split(chr(10))[-1]}); {again}"
