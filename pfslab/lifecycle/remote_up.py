"""A cloud or bare-metal lab's bring-up after ``terraform apply``, over SSH (``scripts/lab
up`` and ``scripts/remote-up``), and what lab-down does on existing hosts:

  the lab's one SSH config (build/<lab>/ssh/config: the lab's key only, host keys checked
  strictly once known, the inner nodes through the login node); host keys pinned from the
  lab file (existing hosts) or each instance's console (target_console) before the first
  connection, else trusted on first use and said so; every first boot waited for (or run,
  on existing hosts); the kit on every node made this checkout's; the cluster's files
  copied and the roles started phase by phase (cluster_copy.py, phases.py); the login node
  readied to launch benchmarks (its inner key, the lab's inside view); scripts/preflight.

Everything comes from build/<lab>/inventory.json (PFSLAB_BUILD) and the lab's key; the kit
on the nodes is PFSLAB_REMOTE_ROOT (default /opt/pfslab). Each refusal is one line."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT
from pfslab.images import kit as kit_files
from pfslab.lifecycle import Refusal, build_dir, inventory_at, log, reach
from pfslab.lifecycle.adapter import Exit, Shell
from pfslab.lifecycle.phases import RealClock, WAIT_DEFAULT, WAIT_VAR, out_of_time, seconds_setting, step_failed
from pfslab.transport.ssh import SshTransport

BOOT_VAR, BOOT_DEFAULT = "PFSLAB_BOOT_TIMEOUT", 1200
COPY_VAR, COPY_DEFAULT = "PFSLAB_COPY_TIMEOUT", 600
#: Seconds between two looks at a node that is still booting.
BOOT_POLL_S = 10


def nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def ssh_config_text(inventory: dict[str, Any], ssh_dir: str, known_file: Path, strict: str = "") -> str:
    """An SSH config for a lab's nodes: per node its SSH address, user and the lab's key only
    (IdentitiesOnly); the nodes without a public address through the login node
    (ProxyJump); host keys checked under the node's name (HostKeyAlias), strictly once
    known_hosts has them, and always on a target with a console (``strict``): a key is
    learnt on first use only from hosts the lab pins no key of. The lab address is an alias
    too: scripts/preflight and job scripts reach nodes by it. ``ssh_dir`` is where the
    config, its known_hosts and (by default) its key live on the machine that uses it."""
    known: set[str] = set()
    if nonempty(known_file):
        known = {ln.split()[0] for ln in known_file.read_text().splitlines() if ln.split()}
    ssh = inventory.get("ssh") or {}
    user = ssh.get("user") or "root"
    key = ssh.get("key") or f"{ssh_dir}/id_ed25519"
    blocks = []
    for node in inventory.get("nodes") or []:
        name, address = _jq(node.get("name")), _jq(node.get("address"))
        block = (f"Host {name} {address}\n  HostName {_jq(node.get('ssh_address') or node.get('address'))}\n"
                 f"  User {user}\n  HostKeyAlias {name}\n")
        if node.get("ssh_jump"):
            block += f"  ProxyJump {node['ssh_jump']}\n"
        block += f"  StrictHostKeyChecking {'yes' if strict == 'strict' or name in known else 'accept-new'}\n"
        blocks.append(block)
    blocks.append(f"Host *\n  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {ssh_dir}/known_hosts\n"
                  "  GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  PasswordAuthentication no\n"
                  "  KbdInteractiveAuthentication no\n  ForwardAgent no\n  ForwardX11 no\n  ControlMaster no\n"
                  "  ConnectTimeout 15\n  ServerAliveInterval 15\n  ServerAliveCountMax 3")
    return "".join(b + "\n" for b in blocks)


def _jq(value: object) -> str:
    """A value as jq's string interpolation shows it."""
    return "null" if value is None else value if isinstance(value, str) else json.dumps(value)


def console_keys(node: str, console: str) -> list[str]:
    """"NODE TYPE KEY" for each host key a first boot printed on its console (cloud-init's
    BEGIN/END SSH HOST KEY KEYS block)."""
    keys, inside = [], False
    for raw in console.split("\n"):
        line = raw.rstrip("\r")
        if "-----BEGIN SSH HOST KEY KEYS-----" in line:
            inside = True
            continue
        if "-----END SSH HOST KEY KEYS-----" in line:
            inside = False
            continue
        if not inside or "-----" in line:
            continue
        words = line.split()
        if len(words) >= 2 and (words[0].startswith("ssh-") or words[0].startswith("ecdsa-")):
            keys.append(f"{node} {words[0]} {words[1]}")
    return keys


def fingerprint(key_line: str) -> str:
    """ssh-keygen's fingerprint of one public key line (empty when it is not one)."""
    done = subprocess.run(["ssh-keygen", "-lf", "-"], input=key_line + "\n", stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    words = done.stdout.split()
    return words[1] if len(words) > 1 else ""


class Remote:
    """One remote lab, reached through its SSH config; lines on stderr with ``tag``."""

    def __init__(self, lab: str, tag: str, kit: Path = KIT_ROOT) -> None:
        self.lab, self.tag, self.kit = lab, tag, kit
        self.build = build_dir()
        self.root = os.environ.get("PFSLAB_REMOTE_ROOT") or "/opt/pfslab"
        self.dir = self.build / lab
        self.ssh_dir = self.dir / "ssh"
        self.config = self.ssh_dir / "config"
        self._shell: Shell | None = None

    # ---- the lab's files --------------------------------------------------------------

    @property
    def inventory_path(self) -> Path:
        return self.dir / "inventory.json"

    def inv(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.inventory_path.read_text())
        return data

    def node_names(self) -> list[str]:
        return [str(n["name"]) for n in self.inv().get("nodes") or []]

    def jump_first(self) -> list[str]:
        """The nodes reached directly first (the login node), then those behind them: a jump
        host's key is checked before anything connects through it."""
        nodes = self.inv().get("nodes") or []
        return [str(n["name"]) for n in nodes if n.get("ssh_jump") is None] + \
            [str(n["name"]) for n in nodes if n.get("ssh_jump") is not None]

    def node(self, name: str) -> dict[str, Any]:
        return next((n for n in self.inv().get("nodes") or [] if n.get("name") == name), {})

    def hosts(self) -> list[str]:
        """Nodes that are existing hosts (no cloud-init): their first boot is a script the kit runs."""
        hosts = (self.inv().get("baremetal") or {}).get("hosts") or {}
        return sorted(hosts)

    def login(self) -> str:
        inv = self.inv()
        return str(inv.get("login") or (inv.get("clients") or [""])[0] or "")

    def login_root(self) -> str:
        return f"{self.root}/build/{self.lab}"

    def key_mark(self) -> str:
        """The mark of this lab instance's inner key in authorized_keys."""
        try:
            instance = json.loads((self.dir / "lab.json").read_text()).get("instance") or {}
            ident = instance.get("id") or "unknown"
        except (OSError, ValueError):
            ident = "unknown"
        return f"pfslab-inner lab={self.lab} instance={ident}"

    def shell(self) -> Shell:
        """The target's adapter (for its console), through the kit's shell."""
        if self._shell is None:
            self._shell = Shell(str(self.inv().get("target")), self.kit, self.tag)
        return self._shell

    def has_console(self) -> bool:
        return self.shell().has("target_console")

    def say(self, message: str) -> None:
        log(self.tag, message)

    # ---- ssh ----------------------------------------------------------------------------

    def ssh(self, node: str, *command: str, stdin: Any = subprocess.DEVNULL, stdout: Any = None,
            stderr: Any = None) -> subprocess.CompletedProcess[str]:
        """ssh to a node through the lab's config (``-n``: stdin closed, unless given)."""
        head = ["ssh", "-n", "-F", str(self.config)] if stdin is subprocess.DEVNULL else ["ssh", "-F", str(self.config)]
        sys.stderr.flush()
        return subprocess.run([*head, node, *command], stdin=stdin, stdout=stdout, stderr=stderr, text=True,
                              check=False)

    def ssh_out(self, node: str, command: str, stderr: Any = None) -> tuple[int, str]:
        done = self.ssh(node, command, stdout=subprocess.PIPE, stderr=stderr)
        return done.returncode, done.stdout.rstrip("\n")

    def refusal(self, node: str, output: str) -> Refusal:
        return Refusal(reach.diagnose(self.lab, inventory_at(self.inventory_path), node, output, self.ssh_dir))

    def step_failed(self, node: str, rc: int, what: str) -> Refusal:
        transport = SshTransport(self.config, self.root, os.environ.get("PFSLAB_REMOTE_CONFIG") or
                                 "/etc/pfslab/node.json")
        return step_failed(self.lab, inventory_at(self.inventory_path), transport, node, rc, what,
                           seconds_setting(os.environ, WAIT_VAR, WAIT_DEFAULT, zero=True), RealClock())

    def timed(self, node: str, what: str, argv: Sequence[str], stdin_path: Path, to_stderr: bool = False) -> int:
        """A copy to a node, bounded in time (PFSLAB_COPY_TIMEOUT): one that runs out is
        stopped here (TERM, KILL 30 s later) and named with the variable that raises it."""
        limit = seconds_setting(os.environ, COPY_VAR, COPY_DEFAULT)
        start = time.monotonic()
        sys.stderr.flush()
        with stdin_path.open("rb") as data:
            proc = subprocess.Popen(list(argv), stdin=data, stdout=sys.stderr.fileno() if to_stderr else None)
            try:
                return proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            except BaseException:
                proc.kill()
                raise
        if time.monotonic() - start >= limit:
            raise out_of_time(self.lab, node, what, COPY_VAR, COPY_DEFAULT, limit)
        return 124

    # ---- the SSH config and host keys --------------------------------------------------

    def key_policy(self) -> str:
        """"strict" when no host key of the lab may be learnt on first use: the target
        prints every node's keys on a console (target_console)."""
        return "strict" if self.has_console() else ""

    def write_ssh_config(self) -> None:
        """build/<lab>/ssh/config, the kit machine's way in (created private: it names the key
        and the lab's inner addresses)."""
        self.ssh_dir.mkdir(parents=True, exist_ok=True)
        self.ssh_dir.chmod(0o700)
        fd = os.open(self.config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(ssh_config_text(self.inv(), str(self.ssh_dir), self.ssh_dir / "known_hosts", self.key_policy()))

    def known(self, node: str) -> bool:
        known = self.ssh_dir / "known_hosts"
        return known.is_file() and any(ln.startswith(f"{node} ") for ln in known.read_text().splitlines())

    def add_known(self, lines: str) -> None:
        known = self.ssh_dir / "known_hosts"
        with known.open("a") as out:
            out.write(lines)
        known.chmod(0o600)

    def pins_keys(self) -> bool:
        try:
            baremetal = (json.loads((self.dir / "lab.json").read_text()).get("targets") or {}).get("baremetal") or {}
        except (OSError, ValueError):
            return False
        return "host_keys" in baremetal or "known_hosts_file" in baremetal

    def pins(self) -> list[tuple[str, str]]:
        """The host-key fingerprints the lab pins: those its file lists
        (targets.baremetal.host_keys) and those of the site's known_hosts_file."""
        baremetal = (json.loads((self.dir / "lab.json").read_text()).get("targets") or {}).get("baremetal") or {}
        found = [(str(n), str(fp)) for n, fps in (baremetal.get("host_keys") or {}).items() for fp in fps]
        name = baremetal.get("known_hosts_file")
        if not name:
            return found
        path = Path(name) if str(name).startswith("/") else self.kit / str(name)
        if not os.access(path, os.R_OK) or not path.is_file():
            raise Refusal(f"lab {self.lab}: its known_hosts_file {path} (targets.baremetal.known_hosts_file) does not "
                          "exist or cannot be read")
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) < 3 or words[0].startswith("#"):
                continue
            found.append((words[0], fingerprint(f"{words[1]} {words[2]}")))
        return found

    def pin_listed_keys(self) -> None:
        """Existing hosts with pinned fingerprints: each host's keys, as it presents them
        (ssh-keyscan: no login; a host behind the login node is scanned from the login node,
        whose own key was checked first), kept in known_hosts only when one has a pinned
        fingerprint. A host whose keys match none is refused before anything logs in to it."""
        if not self.pins_keys():
            return
        pins = self.pins()
        pinned = {n for n, _ in pins}
        missing = [h for h in sorted(self.hosts()) if h not in pinned]
        if missing:
            raise Refusal(f"lab {self.lab} pins the host keys of some hosts but not of {' '.join(missing)} "
                          "(targets.baremetal.host_keys, known_hosts_file): pin every host's key, or none")
        for node in self.jump_first():
            if self.known(node) or node not in self.hosts():
                continue
            entry = self.node(node)
            jump = str(entry.get("ssh_jump") or "")
            addr = _jq(entry.get("ssh_address") or entry.get("address"))
            if jump:
                rc, scanned = self.ssh_out(jump, f"ssh-keyscan -T 10 {_jq(entry.get('address'))} 2>/dev/null")
            else:
                done = subprocess.run(["ssh-keyscan", "-T", "10", addr], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, check=False)
                rc, scanned = done.returncode, done.stdout.rstrip("\n")
            if rc != 0:
                scanned = ""
            if not scanned:
                # Why it showed no key, in the words every other failure to reach a host
                # uses: a login attempt cannot get past the host-key check, so nothing is sent.
                tried = self.ssh(node, "true", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                raise self.refusal(node, tried.stdout)
            want = [fp for n, fp in pins if n == node]
            kept, shown = [], []
            for line in scanned.split("\n"):
                if not line or line.startswith("#"):
                    continue
                fp = fingerprint(line)
                shown.append(fp)
                if fp in want:
                    kept.append(f"{node} {line.split(' ', 1)[1] if ' ' in line else ''}")
            if not kept:
                raise Refusal(
                    f"host {node} ({addr}{', through ' + jump if jump else ''}) presents host keys "
                    f"{''.join(f'{fp} ' for fp in shown if fp)}that lab {self.lab} does not pin (for {node}: "
                    f"{' '.join(want)}); nothing was sent to it. Another machine may be answering at its address; "
                    "if the host was reinstalled, pin its new key (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub "
                    "on it, in targets.baremetal.host_keys or the known_hosts_file)")
            self.add_known("".join(k + "\n" for k in kept))
            self.say(f"host key of {node} checked against the lab file's fingerprint: {fingerprint(kept[0])}")
        self.write_ssh_config()

    def pin_console_keys(self, node: str) -> bool:
        """The host keys a node's first boot printed on its console, from the target's API
        (target_console), written to known_hosts before the kit's first connection."""
        if self.known(node):
            return True
        if not self.has_console():
            return False
        _, console, _ = self.shell().output("target_console", self.lab, node, stderr=subprocess.DEVNULL)
        keys = console_keys(node, console)
        if not keys:
            return False
        self.add_known("".join(k + "\n" for k in keys))
        self.say(f"pinned the host keys node {node} printed on its console ({' '.join(k.split()[1] for k in keys)})")
        self.write_ssh_config()
        return True

    def tofu_note(self, node: str) -> None:
        """A node's host key as learned on first use, for the log (said once per node: a
        later lab-up checks the key strictly against this one)."""
        known = self.ssh_dir / "known_hosts"
        if not nonempty(known):
            return
        done = subprocess.run(["ssh-keygen", "-l", "-F", node, "-f", str(known)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=False)
        words = next((ln.split() for ln in done.stdout.splitlines() if ln and not ln.startswith("#")), [])
        if len(words) < 3:
            return
        line = f"{words[2]} ({words[1]})"
        told = known.with_name("known_hosts.told")
        if told.is_file() and f"{node} {line}" in told.read_text().splitlines():
            return
        self.say(f"host key of {node} trusted on first use (no console to pin it from): {line}")
        with told.open("a") as out:
            out.write(f"{node} {line}\n")

    # ---- the steps ----------------------------------------------------------------------

    def wait_boot(self) -> None:
        """Until cloud-init finished on every node; the node whose first boot failed (with
        the last lines of its cloud-init output) or never finished is named."""
        timeout = int(os.environ.get(BOOT_VAR) or BOOT_DEFAULT)
        start = time.monotonic()
        console = self.has_console()
        for node in self.jump_first():
            if node in self.hosts():
                continue
            # The console shows the host keys once cloud-init's last stage ran: they are
            # pinned before the first connection.
            while not self.pin_console_keys(node) and console:
                if time.monotonic() - start >= timeout:
                    raise Refusal(f"node {node} of lab {self.lab} printed no SSH host keys on its console in "
                                  f"{timeout}s; see its console output")
                time.sleep(BOOT_POLL_S)
            while self.ssh(node, "test -e /var/lib/cloud/instance/boot-finished", stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL).returncode != 0:
                if time.monotonic() - start >= timeout:
                    raise Refusal(f"node {node} of lab {self.lab} did not finish its first boot in {timeout}s "
                                  "(no /var/lib/cloud/instance/boot-finished)")
                time.sleep(BOOT_POLL_S)
            if not console:
                self.tofu_note(node)
            _, status = self.ssh_out(node, "cloud-init status", stderr=subprocess.DEVNULL)
            if "status: done" not in status:
                _, tail = self.ssh_out(node, "tail -n 5 /var/log/cloud-init-output.log", stderr=subprocess.DEVNULL)
                for line in tail.split("\n") if tail else []:
                    print(f"[{self.tag}] {node}: {line}", file=sys.stderr, flush=True)
                raise Refusal(f"the first boot of node {node} of lab {self.lab} failed "
                              f"({status or 'no cloud-init status'}); see /var/log/cloud-init-output.log on it")
        self.say(f"every node of lab {self.lab} finished its first boot")

    def reach_all(self) -> None:
        """Every node answers: the nodes reached directly first (the login node), so a login
        node that is down is named as such, not as every node behind it."""
        key = str((self.inv().get("ssh") or {}).get("key") or "")
        if key and not os.access(key, os.R_OK):
            raise Refusal(f"lab {self.lab}: its SSH key {key} (targets.baremetal.ssh_key) does not exist or cannot "
                          "be read")
        for node in self.jump_first():
            done = self.ssh(node, "true", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                raise self.refusal(node, done.stdout)
        self.say(f"every node of lab {self.lab} answers over SSH")

    def kit_sync(self) -> None:
        """The kit on every node must be this checkout's (the image's digest): a node whose
        kit differs gets this checkout's (packer/scripts/install-kit.sh sync: the image
        build's own unpack and checks), and the log says so. The archive goes to a folder of
        a random name the node makes (mkdir fails on anything already there), and its sha256
        goes on the command line: install-kit.sh refuses an archive that differs."""
        want = kit_files.image_digest(Path(self.kit))
        archive: Path | None = None
        total = ""
        for node in self.node_names():
            rc, have = self.ssh_out(node, f"sha256sum 2>/dev/null <'{self.root}/.pfslab-manifest' | cut -d' ' -f1")
            have = have if rc == 0 else ""
            if have == want:
                continue
            self.say(f"the kit on {node} ({have[:12]}{' ' if have else ''}at {self.root}) is not this checkout's "
                     f"({want[:12]}): unpacking this checkout's there")
            if archive is None:
                # In the lab's state, not /tmp: a sync stopped part way leaves it where
                # lab-down removes it.
                fd, name = tempfile.mkstemp(prefix="kit-sync.", dir=self.dir)
                os.close(fd)
                archive = Path(name)
                kit_files.kit_archive(Path(self.kit), archive)
                with archive.open("rb") as data:
                    total = subprocess.run(["sha256sum"], stdin=data, stdout=subprocess.PIPE, text=True,
                                           check=True).stdout.split()[0]
            # Only a name (random, made here); the node's mkdir creates it or fails.
            folder = f"/tmp/pfslab-kit-sync.{secrets.token_hex(6)}"
            ssh = ["ssh", "-F", str(self.config), node]
            ok = self.timed(node, "copying this checkout's kit",
                            [*ssh, f"umask 077 && mkdir '{folder}' && cat >'{folder}/kit.tar.gz'"], archive) == 0
            ok = ok and self.timed(
                node, "unpacking this checkout's kit",
                [*ssh, f"PFSLAB_KIT_ARCHIVE='{folder}/kit.tar.gz' KIT='{self.root}' bash -s sync {want} {total}; "
                       f"rc=$?; rm -rf '{folder}'; exit $rc"],
                self.kit / "packer" / "scripts" / "install-kit.sh", to_stderr=True) == 0
            if not ok:
                archive.unlink(missing_ok=True)
                raise Refusal(f"could not unpack this checkout's kit on {node} of lab {self.lab}; see the lines "
                              "above")
        # One that ran out of time stays (above): lab-down removes it with the lab's state.
        if archive is not None:
            archive.unlink(missing_ok=True)
        self.say(f"every node of lab {self.lab} runs this checkout's kit ({want[:12]})")

    def boot_hosts(self) -> None:
        """Existing hosts get the first boot their user-data would have run, as a script over
        SSH. One lab at a time: a host that holds another lab's records is refused before
        any host is touched."""
        hosts = self.hosts()
        for node in hosts:
            _, records = self.ssh_out(node, "cat /etc/pfslab/node.json 2>/dev/null || true")
            try:
                other = str((json.loads(records) or {}).get("lab") or "") if records.strip() else ""
            except (ValueError, AttributeError):
                other = ""
            if other and other != self.lab:
                raise Refusal(f"host {node} holds the records of lab {other} (/etc/pfslab/node.json): existing hosts "
                              f"take one lab at a time; run 'make lab-down LAB={other}' first")
        for node in hosts:
            script = self.dir / "boot" / f"{node}.sh"
            if not nonempty(script):
                raise Refusal(f"no first-boot script for host {node} ({script}); run 'make lab-up LAB={self.lab}' again")
            self.say(f"first boot of existing host {node}")
            with script.open() as data:
                done = self.ssh(node, "sh", "-s", stdin=data, stdout=sys.stderr.fileno())
            if done.returncode != 0:
                raise self.step_failed(node, done.returncode, "its first-boot script")
            self.tofu_note(node)

    def kit_command(self, *args: str) -> None:
        """The kit's own command for a step (cluster-copy, phases), with this lab's places."""
        env = dict(os.environ, PFSLAB_BUILD=str(self.build), PFSLAB_REMOTE_ROOT=self.root, PFSLAB_LOG_TAG=self.tag)
        sys.stderr.flush()
        status = subprocess.run([str(self.kit / ".venv" / "bin" / "pfslab"), *args], env=env, check=False).returncode
        if status != 0:
            raise Exit(status)

    # ---- the login node -------------------------------------------------------------------

    def login_kit(self, login: str) -> None:
        """The login node can run the kit's commands (its image is a client image of this kit)."""
        if self.ssh(login, f"test -x '{self.root}/.venv/bin/pfslab' && test -x '{self.root}/.venv/bin/reframe'"
                    ).returncode != 0:
            raise Refusal(f"login node {login} has no kit environment ({self.root}/.venv with pfslab and reframe): its "
                          "image must be a client image of this kit (packer/scripts/toolchain.sh: toolchain=distro or "
                          "on)")

    def inner_key(self, login: str) -> None:
        """The lab's inner key: made on the login node (the private half never leaves it), its
        public half authorised on every node for the login node's lab address only."""
        folder = f"{self.login_root()}/ssh"
        mark = self.key_mark()
        rc, pub = self.ssh_out(login, f"umask 077 && mkdir -p '{folder}' && chmod 700 '{folder}' && "
                                      f"{{ test -s '{folder}/id_ed25519' || ssh-keygen -q -t ed25519 -N '' -C '{mark}' "
                                      f"-f '{folder}/id_ed25519' >/dev/null; }} && cat '{folder}/id_ed25519.pub'")
        if rc != 0:
            raise Refusal(f"could not make the lab's inner key on login node {login}")
        source = _jq(self.node(login).get("address"))
        words = (pub.split("\n")[0].split() + ["", ""])[:2]
        line = f'from="{source}",no-agent-forwarding,no-port-forwarding,no-X11-forwarding {words[0]} {words[1]} {mark}'
        for node in self.node_names():
            # Replaces an older key of this lab instance (a login node that was rebuilt).
            done = self.ssh(node, "umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && "
                                  f"{{ grep -qxF '{line}' ~/.ssh/authorized_keys || {{ {{ grep -vF '{mark}' "
                                  "~/.ssh/authorized_keys || true; } >~/.ssh/authorized_keys.pfslab && "
                                  f"echo '{line}' >>~/.ssh/authorized_keys.pfslab && mv ~/.ssh/authorized_keys.pfslab "
                                  "~/.ssh/authorized_keys; }; }")
            if done.returncode != 0:
                raise self.step_failed(node, done.returncode, "authorising the lab's inner key")
        self.say(f"the lab's inner key (made on {login}, never copied off it) is authorised on every node for "
                 f"{source} only")

    def ship_state(self) -> None:
        """The lab's state as the login node must see it (every node at its lab address, no
        ProxyJump, the inner key; host keys strict), shipped there replacing the last copy."""
        login = self.login()
        folder = self.login_root()
        with tempfile.TemporaryDirectory() as staging:
            stage = Path(staging)
            ssh = stage / self.lab / "ssh"
            ssh.mkdir(parents=True)
            (stage / "active-lab").write_text(f"{self.lab}\n")
            inside = self.inv()
            inside["nodes"] = [dict(n, ssh_address=n.get("address"), ssh_jump=None) for n in inside.get("nodes") or []]
            inside["ssh"] = dict(inside.get("ssh") or {}, key=f"{folder}/ssh/id_ed25519",
                                 known_hosts=f"{folder}/ssh/known_hosts")
            inside["inside"] = login
            (stage / self.lab / "inventory.json").write_text(json.dumps(inside, indent=2) + "\n")
            shutil.copyfile(self.dir / "lab.json", stage / self.lab / "lab.json")
            if nonempty(self.dir / "calibration.json"):
                shutil.copyfile(self.dir / "calibration.json", stage / self.lab / "calibration.json")
            if not (self.ssh_dir / "known_hosts").is_file():
                print(f"cp: cannot stat '{self.ssh_dir}/known_hosts': No such file or directory", file=sys.stderr)
                raise Exit(1)
            shutil.copyfile(self.ssh_dir / "known_hosts", ssh / "known_hosts")
            (ssh / "config").write_text(ssh_config_text(inside, f"{folder}/ssh", ssh / "known_hosts",
                                                        self.key_policy()))
            ssh.chmod(0o700)
            for entry in ssh.iterdir():
                entry.chmod(0o600)
            sys.stderr.flush()
            tar = subprocess.Popen(["tar", "-C", str(stage), "-cf", "-", "."], stdout=subprocess.PIPE)
            done = self.ssh(login, f"umask 077 && mkdir -p '{self.root}/build' && tar -C '{self.root}/build' -xf - "
                                   "--no-same-owner", stdin=tar.stdout)
            assert tar.stdout is not None
            # What ssh did not take is read here: tar's status is its own, not a broken pipe's.
            while tar.stdout.read(65536):
                pass
            tar.stdout.close()
            if tar.wait() != 0 or done.returncode != 0:
                raise self.step_failed(login, 255, "copying the lab's state to the login node")

    def login_check(self, login: str) -> None:
        """Every node reached from the login node, as the benchmarks will reach them."""
        done = self.ssh(login, f"cd '{self.root}' && for n in $(jq -r '.nodes[].name' build/{self.lab}/inventory.json); "
                               "do scripts/lab-rsh -n \"$n\" true 2>&1 | tail -n 1 | sed \"s/^/$n: /\" | grep . && "
                               "exit 1; done; exit 0", stdout=sys.stderr.fileno())
        if done.returncode != 0:
            raise Refusal(f"login node {login} cannot reach every node of lab {self.lab} with the lab's inner key (the "
                          f"line above); run 'make lab-up LAB={self.lab}' again")
        self.say(f"login node {login} reaches every node of lab {self.lab}")

    def login_setup(self) -> None:
        """The login node ready to launch benchmarks: the kit, the inner key, the lab's state."""
        login = self.login()
        if not login:
            self.say(f"lab {self.lab} has no client node: no login node to launch benchmarks from")
            return
        self.login_kit(login)
        self.inner_key(login)
        self.ship_state()
        self.login_check(login)

    def preflight(self) -> int:
        """scripts/preflight on the lab (its MPI probe runs on the login node)."""
        if not nonempty(self.config):
            self.write_ssh_config()
        sys.stderr.flush()
        return subprocess.run([str(self.kit / "scripts" / "preflight"), self.lab],
                              env=dict(os.environ, PFSLAB_BUILD=str(self.build)), check=False).returncode

    def up(self) -> None:
        """The whole bring-up after apply."""
        if not nonempty(self.inventory_path):
            raise Refusal(f"lab {self.lab} has no inventory ({self.inventory_path}); run 'make lab-up LAB={self.lab}'")
        from pfslab.lifecycle.labstate import require_cmd

        require_cmd("ssh", "scp", "jq", "ssh-keygen")
        if self.shell().console_cmd():
            require_cmd(self.shell().console_cmd())
        self.write_ssh_config()
        self.pin_listed_keys()
        self.wait_boot()
        if self.hosts():
            self.reach_all()
        self.kit_sync()
        self.boot_hosts()
        self.kit_command("lab", "cluster-copy", self.lab)
        self.kit_command("lab", "phases", self.lab, "up")
        # The login node first: preflight's MPI probe runs there, with the kit, the inner
        # key and the lab's inventory that login_setup puts there.
        self.login_setup()
        if self.preflight() != 0:
            raise Refusal(f"lab {self.lab} failed its preflight (the FAIL lines above); fix them, then run 'make "
                          f"lab-up LAB={self.lab}' again")

    # ---- lab-down and calibration --------------------------------------------------------

    def forget(self) -> None:
        """What the lab wrote on hosts that outlive it, removed (scripts/host-forget, sent
        from this checkout and run there): first-boot files, role state, the inner key's
        authorisation and, on the login node, the lab's state and runs."""
        inv = self.inv()
        mount = _jq((inv.get("filesystem") or {}).get("mount"))
        # Exactly the lines the first boot appended to /etc/hosts (the lab plan's hosts_file).
        words = [self.lab, self.key_mark(), mount, self.root, f"# pfslab hosts of lab {self.lab}",
                 *(f"{_jq(n.get('address'))} {_jq(n.get('name'))}" for n in inv.get("nodes") or [])]
        for node in self.node_names():
            with (self.kit / "scripts" / "host-forget").open() as script:
                done = self.ssh(node, "bash -s -- " + " ".join(shlex.quote(w) for w in words), stdin=script,
                                stdout=sys.stderr.fileno())
            if done.returncode != 0:
                self.say(f"could not remove what lab {self.lab} wrote on {node} (ignored: see above)")
        self.say(f"removed what lab {self.lab} wrote on its hosts (first-boot files, role state, the inner key's "
                 "authorisation)")

    def calibrate(self, calibrates: bool, force: bool = False) -> None:
        """The lab's calibration, measured from the login node through the lab's first client
        at the first lab-up, and brought home."""
        file = self.dir / "calibration.json"
        if not calibrates:
            return
        if not force and nonempty(file):
            self.say(f"calibration of lab {self.lab} kept from {json.loads(file.read_text()).get('measured_at')} "
                     "('make calibrate' runs it again)")
            return
        login = self.login()
        if not login:
            raise Refusal(f"lab {self.lab} has no client node to calibrate through")
        self.say(f"calibrating lab {self.lab} from its login node {login}: fio probes through its first client "
                 "(reframe/references/policy.yaml)")
        sys.stderr.flush()
        with subprocess.Popen(["ssh", "-n", "-F", str(self.config), login,
                               f"cd '{self.root}' && PFSLAB_LAB={self.lab} .venv/bin/pfslab calibrate {self.lab}"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                print(f"[lab] {line.rstrip(chr(10))}", file=sys.stderr, flush=True)
        if proc.returncode != 0:
            raise Refusal(f"the calibration of lab {self.lab} failed on its login node {login} (lines above)")
        staged = file.with_name("calibration.json.new")
        with staged.open("w") as out:
            if self.ssh(login, f"cat '{self.login_root()}/calibration.json'", stdout=out).returncode != 0:
                raise Refusal(f"could not bring the calibration of lab {self.lab} home from {login}")
        staged.replace(file)
        self.say(f"calibration kept in {file}; every verdict of the lab shows it")


def calibrates(lab: str) -> bool:
    """benchmark.calibrate of the lab as this command (or its lab-up) resolved it."""
    resolved = os.environ.get("PFSLAB_LAB_JSON", "")
    for path in (Path(resolved) if resolved else None, build_dir() / lab / "lab.json"):
        if path is not None and nonempty(path):
            data = json.loads(path.read_text())
            if data.get("name") == lab:
                return (data.get("benchmark") or {}).get("calibrate") is True
    from pfslab import labs

    return labs.setting(labs.load(lab), "benchmark.calibrate") is True


# ---- what scripts/lab and the kit's shell call ------------------------------------------

def remote_up(lab: str, tag: str = "lab") -> None:
    Remote(lab, tag).up()


def login_calibrate(lab: str, force: bool = False, tag: str = "lab") -> None:
    Remote(lab, tag).calibrate(calibrates(lab), force)


def remote_preflight(lab: str, tag: str = "lab") -> int:
    return Remote(lab, tag).preflight()


def hosts_down(lab: str, tag: str = "lab") -> None:
    """Existing hosts outlive the lab: its bench and what a run left ended (the bench's
    functions, scripts/lib/login.sh), its roles stopped, and what it wrote removed."""
    remote = Remote(lab, tag)
    if not nonempty(remote.config):
        remote.write_ssh_config()
    bench = Shell("", remote.kit, tag)
    bench.call("remote_stop_bench", lab)
    bench.call("remote_end_lab_processes", lab)
    try:
        remote.kit_command("lab", "phases", lab, "down")
    except Exit:
        remote.say("could not stop every role on the existing hosts (ignored)")
    remote.forget()


#: ``pfslab labctl remote STEP LAB``: the steps the kit's shell still calls by name.
STEPS = ("up", "down", "ssh-config", "kit-sync", "ship-state", "boot-hosts", "forget", "preflight")


def step(name: str, lab: str, tag: str) -> int:
    remote = Remote(lab, tag)
    if name == "up":
        remote.up()
    elif name == "down":
        if not nonempty(remote.inventory_path):
            raise Refusal(f"lab {lab} has no inventory ({remote.inventory_path}); nothing to stop")
        from pfslab.lifecycle.labstate import require_cmd

        require_cmd("ssh", "jq")
        remote.kit_command("lab", "phases", lab, "down")
        remote.say(f"stopped every role of lab {lab}")
    elif name == "ssh-config":
        remote.write_ssh_config()
    elif name == "kit-sync":
        remote.kit_sync()
    elif name == "ship-state":
        remote.ship_state()
    elif name == "boot-hosts":
        remote.boot_hosts()
    elif name == "forget":
        remote.forget()
    elif name == "preflight":
        return remote.preflight()
    else:
        raise Refusal(f"'{name}' is not a remote step; give one of {', '.join(STEPS)}")
    return 0
