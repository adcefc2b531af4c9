"""The hosts on this machine: made, started, faulted and removed (``pfslab hosts``).

Each host is a system container: its own network namespace on a private bridge (in a
"switch" namespace of its own: this machine has no address on the lab's subnet), its
own mount namespace with an overlay root from the kit's image recipe (server or client
image, :mod:`pfslab.hosts.images`) and its own upper layer (its disk; its own /etc,
/var, /opt), /run and /tmp on tmpfs, its own hostname and PID namespace with tini as
PID 1, and an sshd that takes only the lab's key (made here if missing, like a cloud
injecting a key). Hosts with data_devices get a sparse file on a loop device shown
inside as that device (e.g. /dev/vdb). The login node also gets a link to this machine
with login_address on its side and a firewall admitting only SSH, like a cloud's
security group. What they are not: they share this machine's kernel.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol

from pfslab.hosts import TAG, CommandFailed, HostsRefusal, images
from pfslab.hosts.plan import HostNode, HostsLab, known_hosts_lines
from pfslab.lifecycle import log

#: Tenths of a second a host gets to answer on port 22 once started.
START_POLLS = 300
#: Tenths of a second a killed host's PID 1 gets to be gone.
KILL_POLLS = 100
#: The login host's firewall: SSH (and its replies) from this machine only, no forwarding.
LOGIN_FIREWALL = """table inet pfslab_login {
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "ext0" ct state established,related accept
    iifname "ext0" tcp dport 22 accept
    iifname "ext0" drop
  }
  chain forward {
    type filter hook forward priority 0; policy drop;
  }
}
"""
#: What a host's PID 1 runs once in its root: host keys made at its first start (kept on
#: its disk), then sshd; the host stays up when sshd stops.
HOST_BOOT = "ssh-keygen -A >/dev/null\nmkdir -p /run/sshd\n/usr/sbin/sshd -E /var/log/sshd.log\nexec sleep infinity\n"
TINI = ["/usr/bin/tini", "--", "/bin/sh", "/run/host-boot"]
#: Character devices of a host's /dev: name, major, minor (all mode 666).
CHAR_DEVICES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9),
                ("tty", 5, 0), ("fuse", 10, 229))
DEV_LINKS = (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"))


# ---- commands -------------------------------------------------------------------------

def run(argv: Sequence[str], stdin: str | None = None, quiet: bool = False) -> None:
    """Run a command; its failure ends the hosts command with its status (its own
    output says why), as a failed command ends a `set -e` script."""
    done = subprocess.run(list(argv), input=stdin, text=True, check=False,
                          stdout=subprocess.DEVNULL if quiet else None)
    if done.returncode != 0:
        raise CommandFailed(list(argv), done.returncode)


def attempt(argv: Sequence[str]) -> bool:
    """Run a command whose failure is an answer (its output dropped)."""
    return subprocess.call(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0


def output(argv: Sequence[str]) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise HostsRefusal(f"{what} needs root (it creates network namespaces, mounts and daemons); "
                           "run it as root or with sudo")


def namespaces() -> list[str]:
    return [line.split()[0] for line in output(["ip", "netns", "list"]).splitlines() if line.strip()]


def proc_root(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/root")
    except OSError:
        return None


def pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- one host --------------------------------------------------------------------------

@dataclass(frozen=True)
class Hosts:
    """The hosts of one lab on this machine."""

    lab: HostsLab

    def dir(self, node: str) -> Path:
        return self.lab.state / node

    def init_pid(self, node: str) -> int | None:
        try:
            return int((self.dir(node) / "init.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def running(self, node: str) -> bool:
        pid = self.init_pid(node)
        return pid is not None and alive(pid) and proc_root(pid) == str(self.dir(node) / "root")

    def find_init(self, node: str) -> bool:
        """The host's PID 1 as this machine sees it: in its root, 1 in its own PID
        namespace; recorded in init.pid."""
        root = str(self.dir(node) / "root")
        for pid in pids():
            if proc_root(pid) != root:
                continue
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            nspid = [line.split() for line in status.splitlines() if line.startswith("NSpid:")]
            if nspid and nspid[0][-1] == "1":
                (self.dir(node) / "init.pid").write_text(f"{pid}\n")
                return True
        return False

    def sshd_answers(self, pid: int) -> bool:
        return attempt(["nsenter", "-t", str(pid), "-n", "--", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/22"])

    def enter(self, pid: int) -> list[str]:
        return ["nsenter", "-t", str(pid), "-m", "-u", "-n", "-p", "-r", "-w", "--"]

    # ---- up -----------------------------------------------------------------------------

    def check_free(self) -> None:
        """Before anything is made: names and the login link's addresses must be free."""
        peer, addr = self.lab.login_peer, self.lab.login_address
        if self.lab.switch_ns in namespaces():
            return
        used = [line.split()[3] for line in output(["ip", "-4", "-o", "addr", "show"]).splitlines()
                if len(line.split()) > 3]
        if any(a.startswith((f"{peer}/", f"{addr}/")) for a in used):
            raise HostsRefusal(f"address {peer} or {addr} (the login host's link, targets.{self.lab.target}."
                               "login_address) is already in use on this machine; take down what uses it or "
                               "change login_address")
        if attempt(["ip", "link", "show", self.lab.login_link]):
            raise HostsRefusal(f"link {self.lab.login_link} already exists (another set of hosts of this "
                               f"checkout?); 'scripts/hosts down {self.lab.name}' first")

    def ensure_key(self) -> None:
        """The lab's key: the hosts' provider hands it out, as a site or cloud does."""
        key = self.lab.ssh_key
        key.parent.mkdir(parents=True, exist_ok=True)
        key.parent.chmod(0o700)
        if not (key.exists() and key.stat().st_size > 0):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"pfslab-hosts-{self.lab.name}",
                 "-f", str(key)], quiet=True)
        key.chmod(0o600)

    def make_switch(self) -> None:
        sw = self.lab.switch_ns
        if sw in namespaces():
            return
        run(["ip", "netns", "add", sw])
        run(["ip", "-n", sw, "link", "set", "lo", "up"])
        run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", sw, "link", "set", "br0", "up"])

    def make_net(self, node: HostNode) -> None:
        """A host's network: eth0 on the switch's bridge; the login host also ext0 to this
        machine with a firewall admitting only SSH (and its replies), and no forwarding."""
        ns, sw = self.lab.host_ns(node.name), self.lab.switch_ns
        if ns in namespaces():
            return
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", sw, "link", "add", node.switch_port, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(["ip", "-n", sw, "link", "set", node.switch_port, "master", "br0", "up"])
        run(["ip", "-n", ns, "addr", "add", f"{node.address}/{self.lab.prefix_len}", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        if node.name != self.lab.login:
            return
        link = self.lab.login_link
        run(["ip", "link", "add", link, "type", "veth", "peer", "name", "ext0", "netns", ns])
        run(["ip", "addr", "add", f"{self.lab.login_peer}/30", "dev", link])
        run(["ip", "link", "set", link, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{self.lab.login_address}/30", "dev", "ext0"])
        run(["ip", "-n", ns, "link", "set", "ext0", "up"])
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=0"])
        run(["ip", "netns", "exec", ns, "nft", "-f", "-"], stdin=LOGIN_FIREWALL)

    def make_disks(self, node: HostNode) -> None:
        """A host's data disks: sparse files on loop devices (kept across restarts)."""
        lines = []
        for i, dev in enumerate(node.data_devices):
            img = self.lab.state / "disks" / f"{node.name}-{i}.img"
            img.parent.mkdir(parents=True, exist_ok=True)
            if not img.exists():
                with open(img, "wb") as f:
                    f.truncate(node.data_size_gb * 1024**3)
            found = output(["losetup", "-j", str(img)]).splitlines()
            loop = found[0].split(":")[0] if found else ""
            if not loop:
                done = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr)
                    raise CommandFailed(["losetup", "-f", "--show", str(img)], done.returncode)
                loop = done.stdout.strip()
            lines.append(f"{dev} {loop}\n")
        new = self.dir(node.name) / "devices.new"
        new.write_text("".join(lines))
        new.rename(self.dir(node.name) / "devices")

    def make_upper(self, node: str) -> None:
        """The host's own layer: its disk. What a provider puts there at creation: the
        lab's public key for root, its hostname, its SSH host keys (the image has none),
        recorded as a site records its machines' keys: the lab pins them
        (known_hosts_file)."""
        up = self.dir(node) / "upper"
        if up.is_dir():
            return
        for d in (up / "root/.ssh", up / "etc/ssh", self.dir(node) / "work", self.dir(node) / "root"):
            d.mkdir(parents=True, exist_ok=True)
        (up / "root/.ssh").chmod(0o700)
        keys = up / "root/.ssh/authorized_keys"
        shutil.copyfile(f"{self.lab.ssh_key}.pub", keys)
        keys.chmod(0o600)
        (up / "etc/hostname").write_text(f"{node}\n")
        run(["ssh-keygen", "-q", "-A", "-f", str(up)], quiet=True)
        public = [p.read_text() for p in sorted((up / "etc/ssh").glob("ssh_host_*_key.pub"))]
        record = known_hosts_lines(node, [line for text in public for line in text.splitlines()])
        (self.dir(node) / "host-keys").write_text("".join(f"{line}\n" for line in record))

    def publish_host_keys(self) -> None:
        """The hosts' published keys, as the lab file names the file: each host's record,
        made when the host was made (a key changed on the host since is not the site's)."""
        known = self.lab.known_hosts_file
        if known is None:
            return
        known.parent.mkdir(parents=True, exist_ok=True)
        new = Path(f"{known}.new")
        new.write_text("".join((self.dir(n) / "host-keys").read_text() for n in self.lab.node_names()))
        new.rename(known)

    def start_host(self, node: HostNode) -> None:
        name = node.name
        if self.running(name):
            # A running host whose sshd stopped gets it back (what a site's monitoring would do).
            pid = self.init_pid(name)
            assert pid is not None
            if not self.sshd_answers(pid):
                run([*self.enter(pid), "/usr/sbin/sshd", "-E", "/var/log/sshd.log"])
                log(TAG, f"host {name}: its sshd was not running; started it again")
            self.wait_started(node)
            return
        images_at = self.lab.state / "images"
        image = (images_at / node.image).read_text().strip()
        base = (images_at / "base").read_text().strip()
        self.make_upper(name)
        self.make_disks(node)
        (self.dir(name) / "off").unlink(missing_ok=True)
        with open(self.dir(name) / "console.log", "wb") as console:
            subprocess.Popen(
                ["ip", "netns", "exec", self.lab.host_ns(name), "unshare", "--mount", "--uts", "--pid", "--fork",
                 "--propagation", "private", "--",
                 *images.self_command("_init", str(self.dir(name)), name, image, base)],
                stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_started(node)

    def wait_started(self, node: HostNode) -> None:
        name = node.name
        for _ in range(START_POLLS + 1):
            if (self.running(name) or self.find_init(name)) and self.running(name):
                pid = self.init_pid(name)
                if pid is not None and self.sshd_answers(pid):
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:40]
                    log(TAG, f"host {name} is up: {node.address}, PID 1 {pid} ({cmdline})")
                    return
            time.sleep(0.1)
        console = self.dir(name) / "console.log"
        lines = console.read_text(errors="replace").splitlines()[-5:] if console.exists() else []
        if lines:
            print("\n".join(lines), file=sys.stderr, flush=True)
        raise HostsRefusal(f"host {name} did not start its sshd in 30 s (its console above: {console})")

    def up(self) -> None:
        start = time.monotonic()
        require_root("make hosts-up (namespaces, loop devices)")
        images.require_cmd("ip", "nsenter", "unshare", "losetup", "nft", "ssh-keygen", "mmdebstrap")
        self.check_free()
        self.ensure_key()
        images_at = self.lab.state / "images"
        images_at.mkdir(parents=True, exist_ok=True)
        base = images.build_base()
        (images_at / "base").write_text(f"{base}\n")
        from pfslab import registry

        family = registry.family(self.lab.filesystem).family
        for role in self.lab.images():
            upper = images.build_image(role, family, base, self.lab.target)
            (images_at / role).write_text(f"{upper}\n")
        self.make_switch()
        for node in self.lab.nodes:
            self.dir(node.name).mkdir(parents=True, exist_ok=True)
            self.make_net(node)
            self.start_host(node)
        for node in self.lab.nodes:
            if self.init_pid(node.name) is None:
                raise HostsRefusal(f"host {node.name} has no init")
        self.publish_host_keys()
        log(TAG, f"hosts of lab {self.lab.name} are up in {int(time.monotonic() - start)} s; this machine reaches "
                 f"{self.lab.login} at {self.lab.login_address}:22 only (make lab-up LAB={self.lab.name})")

    # ---- faults ---------------------------------------------------------------------

    def kill_host(self, node: str) -> None:
        pid = self.init_pid(node)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            for _ in range(KILL_POLLS):
                if not alive(pid):
                    break
                time.sleep(0.1)
        (self.dir(node) / "init.pid").unlink(missing_ok=True)

    def exec(self, node: str, command: Sequence[str]) -> NoReturn:
        self.lab.node(node)
        pid = self.init_pid(node)
        if not self.running(node) or pid is None:
            raise HostsRefusal(f"host {node} is not running ('scripts/hosts up {self.lab.name}' starts it)")
        if not command:
            raise HostsRefusal(f"usage: scripts/hosts exec {self.lab.name} {node} COMMAND...")
        argv = [*self.enter(pid), *command]
        default_signals()
        os.execvp(argv[0], argv)

    def stop_sshd(self, node: str) -> None:
        self.lab.node(node)
        pid = self.init_pid(node)
        if not self.running(node) or pid is None:
            raise HostsRefusal(f"host {node} is not running")
        attempt([*self.enter(pid), "pkill", "-x", "sshd"])
        log(TAG, f"host {node}: sshd stopped (the host stays up; 'scripts/hosts restart {self.lab.name} {node}' "
                 "or 'up' brings sshd back)")

    def restart(self, node: str) -> None:
        host = self.lab.node(node)
        self.kill_host(node)
        self.start_host(host)
        log(TAG, f"host {node} restarted (its processes ended, /run and /tmp empty, its disk kept)")

    def poweroff(self, node: str) -> None:
        self.lab.node(node)
        self.kill_host(node)
        (self.dir(node) / "off").touch()
        log(TAG, f"host {node} is powered off ('scripts/hosts up {self.lab.name}' starts it again)")

    # ---- down -----------------------------------------------------------------------

    def down(self, machine: Machine | None = None) -> None:
        start = time.monotonic()
        require_root("make hosts-down")
        seen = machine or LiveMachine()
        for node in self.lab.node_names():
            self.kill_host(node)
            # A host whose init.pid was lost (a SIGKILLed hosts-up): its processes by their root.
            root = str(self.dir(node) / "root")
            for pid, proc in seen.process_roots():
                if proc == root:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            attempt(["ip", "netns", "del", self.lab.host_ns(node)])
        attempt(["ip", "netns", "del", self.lab.switch_ns])
        attempt(["ip", "link", "del", self.lab.login_link])
        if self.lab.state.is_dir():
            for line in seen.loop_devices():
                if f"{self.lab.state}/" in line:
                    attempt(["losetup", "-d", line.split(":")[0]])
        time.sleep(0.2)
        shutil.rmtree(self.lab.state, ignore_errors=True)
        try:
            self.lab.state.parent.rmdir()
        except OSError:
            pass
        left = leftovers(self.lab, seen)
        if left:
            print("\n".join(f"[{TAG}] left behind: {line}" for line in left), file=sys.stderr, flush=True)
            raise HostsRefusal(f"the hosts of lab {self.lab.name} are not completely down; the lines above say "
                               "what is left")
        log(TAG, f"hosts of lab {self.lab.name} are down in {int(time.monotonic() - start)} s; nothing is left "
                 "(checked namespaces, links, loop devices, mounts, processes, files); images stay in "
                 "build/host-images/ (like build/images/)")

    def status(self) -> int:
        rc = 0
        for node in self.lab.nodes:
            if self.running(node.name):
                state = f"running, PID 1 {self.init_pid(node.name)}"
            elif (self.dir(node.name) / "off").exists():
                state, rc = "powered off", 1
            else:
                state, rc = "not started", 1
            print(f"{node.name:<6} {node.address:<14} {state}", flush=True)
        return rc


# ---- what is left ---------------------------------------------------------------------

class Machine(Protocol):
    """What the leftovers check reads of this machine."""

    def namespaces(self) -> list[str]: ...

    def link_exists(self, name: str) -> bool: ...

    def loop_devices(self) -> list[str]:
        """losetup -a's lines: ``/dev/loopN: [dev]:inode (backing file)``."""

    def mounts(self) -> list[str]:
        """Every mount point (findmnt's raw form)."""

    def process_roots(self) -> list[tuple[int, str]]:
        """Every process and its root directory."""

    def exists(self, path: Path) -> bool: ...


class LiveMachine:
    """This machine."""

    def namespaces(self) -> list[str]:
        return namespaces()

    def link_exists(self, name: str) -> bool:
        return attempt(["ip", "link", "show", name])

    def loop_devices(self) -> list[str]:
        return output(["losetup", "-a"]).splitlines()

    def mounts(self) -> list[str]:
        return output(["findmnt", "-rn", "-o", "TARGET"]).splitlines()

    def process_roots(self) -> list[tuple[int, str]]:
        return [(pid, root) for pid in pids() if (root := proc_root(pid)) is not None]

    def exists(self, path: Path) -> bool:
        return os.path.lexists(path)


def leftovers(lab: HostsLab, machine: Machine) -> list[str]:
    """What of the lab's hosts is still on this machine, one line each: namespaces named
    with the instance's prefix, the login link, loop devices, mounts and processes under
    build/hosts/<lab>/, and that directory itself."""
    state = f"{lab.state}/"
    found = [f"namespace {ns}" for ns in machine.namespaces() if ns.startswith(f"{lab.netns_prefix}-h")]
    if machine.link_exists(lab.login_link):
        found.append(f"link {lab.login_link}")
    if machine.exists(lab.state):
        found += [f"loop device {line}" for line in machine.loop_devices() if state in line]
    found += [f"mount {m}" for m in machine.mounts() if state in m]
    found += [f"process {pid}" for pid, root in machine.process_roots() if root.startswith(state)]
    if machine.exists(lab.state):
        found.append(f"files {lab.state}")
    return found


# ---- a host's PID 1 -------------------------------------------------------------------

def _mount(*args: str) -> None:
    run(["mount", *args])


def host_init(directory: Path, node: str, image: str, base: str) -> NoReturn:
    """PID 1 of a new host until it execs tini inside its root: the mounts of its own
    namespace, its devices, its hostname."""
    root = directory / "root"
    socket.sethostname(node)
    _mount("-t", "overlay", "overlay", "-o",
           images.overlay_options([image, base], directory / "upper", directory / "work"), str(root))
    _mount("-t", "proc", "proc", f"{root}/proc")
    _mount("-t", "sysfs", "-o", "ro", "sysfs", f"{root}/sys")
    _mount("-t", "tmpfs", "-o", "mode=755,nosuid", "tmpfs", f"{root}/dev")
    dev = root / "dev"
    for name, major, minor in CHAR_DEVICES:
        _mknod(dev / name, stat.S_IFCHR, 0o666, major, minor)
    (dev / "pts").mkdir(parents=True, exist_ok=True)
    (dev / "shm").mkdir(parents=True, exist_ok=True)
    _mount("-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=620", "devpts", f"{dev}/pts")
    for name, target in DEV_LINKS:
        (dev / name).symlink_to(target)
    _mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", f"{dev}/shm")
    for line in (directory / "devices").read_text().splitlines():
        fields = line.split()
        if len(fields) != 2:
            continue
        loop = os.stat(fields[1]).st_rdev
        _mknod(Path(f"{root}{fields[0]}"), stat.S_IFBLK, 0o660, os.major(loop), os.minor(loop))
    _mount("-t", "tmpfs", "-o", "mode=755", "tmpfs", f"{root}/run")
    _mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", f"{root}/tmp")
    (root / "run/host-boot").write_text(HOST_BOOT)
    sys.stdout.flush()
    sys.stderr.flush()
    os.chroot(root)
    os.chdir("/")
    default_signals()
    os.execv(TINI[0], TINI)


def default_signals() -> None:
    """Python ignores SIGPIPE and SIGXFSZ, and an exec keeps what is ignored: what it
    execs (a host's PID 1 and everything under it, a command run in a host) gets them
    back as any shell's commands have them."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


def _mknod(path: Path, kind: int, mode: int, major: int, minor: int) -> None:
    os.mknod(path, kind | mode, os.makedev(major, minor))
    path.chmod(mode)  # mknod's mode is masked by the umask; mknod -m's is not

