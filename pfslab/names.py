"""Every name the kit derives from an input it does not control, made here only.

A checkout's path, a lab's name (``+`` allowed), a node group's name and the owner
come from users; the kernel, cgroupfs, Unix sockets and the shell scripts that use
these names each have limits of their own. Each function returns a name that is
valid for its consumer whatever the input the schema allows, and the ``*_problem``
functions state those limits, so that tests can check every derivation against them
(tests/unit/test_names.py) and the kit can refuse what cannot be made valid.

Derivations are fixed-width where a limit is tight: a name is never cut by a tool
that happens to print a shorter number (the veth names used to come from ``cksum``,
whose CRC has fewer than nine digits for about one input in 43, one local lab in six).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: Where local labs keep their runtime records (pid files, sockets, nsrsh host records).
RUN_BASE = Path("/run/pfslab")
#: The longest run root: daemons put admin sockets under it, and a Unix socket's path
#: holds at most 107 bytes (``<run_root>/<node>/<daemon>.<id>.asok``).
RUN_ROOT_MAX = 40
#: IFNAMSIZ less its terminating NUL.
IFNAME_MAX = 15
#: A file name (a network namespace under /run/netns, a cgroup directory).
NAME_MAX = 255

_HEX = "0123456789abcdef"
_IFNAME = re.compile(r"^[a-z][a-z0-9-]*$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
#: What a checkout's path may hold: it is written into shell lines (Terraform's
#: local-exec commands, single-quoted), into Open MPI's rsh agent and IOzone's RSH
#: (split on spaces) and into PATH-like lists (split on ':').
_CHECKOUT_PATH = re.compile(r"^/[A-Za-z0-9._/+@-]*$")


def _digest(text: str, width: int) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:width]


def checkout_id(root: Path) -> str:
    """Eight hex digits of the SHA-1 of the checkout's real path: stable for one
    checkout, different for a clone elsewhere."""
    return _digest(str(root), 8)


def checkout_path_problem(root: Path) -> str | None:
    """Why the kit cannot run from ``root`` (None: it can)."""
    if not _CHECKOUT_PATH.match(str(root)):
        bad = sorted({c for c in str(root) if not re.match(r"[A-Za-z0-9._/+@-]", c)})
        return (f"the checkout's path {str(root)!r} holds {''.join(bad)!r}; the kit writes it into shell lines "
                "and MPI's agent, so it may hold only letters, digits and / . _ + @ -; clone it elsewhere")
    return None


def instance_id(lab: str, checkout: str) -> str:
    """The lab instance: the lab's name and the checkout id."""
    return f"{lab}-{checkout}"


def cloud_name(lab: str, owner: str) -> str:
    """The name of lab ``lab``'s cloud resources that must be unique in the account (AWS
    key pair, security and placement groups; the Azure resource group): ``pfslab-<lab>-``
    and eight hex digits of lab and owner, so two owners' labs of one name do not collide.
    A lab name's '+' becomes '-' (Azure's names allow none); the rest is letters, digits,
    '.', '-', at most 56 characters, ending in a hex digit: valid in both clouds."""
    digest = hashlib.sha256(f"{lab}\n{owner}".encode()).hexdigest()[:8]
    return f"pfslab-{lab.replace('+', '-')}-{digest}"


def netns_prefix(instance: str) -> str:
    """``pfs-`` and six hex digits of the instance: the prefix of its node namespaces."""
    return "pfs-" + _digest(instance, 6)


def node_netns(prefix: str, node: str) -> str:
    return f"{prefix}-{node}"


def _base36(number: int, width: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while number:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
    return out.rjust(width, "0")


def node_veth(prefix: str, position: int) -> str:
    """The host side of a node's veth pair: ``pfv``, the six hex digits of the
    instance's namespace prefix and the node's position in base 36, always 12
    characters. Distinct for the nodes of one instance by construction, and for two
    instances whenever their namespace prefixes differ (collisions refuses equal ones).
    """
    if not re.fullmatch(r"pfs-[0-9a-f]{6}", prefix):
        raise ValueError(f"namespace prefix {prefix!r} is not 'pfs-' and six hex digits")
    if not 0 <= position < 36**3:
        raise ValueError(f"node position {position} is outside 0..{36**3 - 1}")
    return "pfv" + prefix[4:] + _base36(position, 3)


def run_root(lab: str, checkout: str) -> str:
    """``/run/pfslab/<lab>-<checkout>``, the lab's name shortened (its first 12
    characters and six hex digits of the whole) when the path would pass
    RUN_ROOT_MAX."""
    room = RUN_ROOT_MAX - len(f"{RUN_BASE}/") - len(checkout) - 1
    short = lab if len(lab) <= room else f"{lab[:room - 7]}-{_digest(lab, 6)}"
    return f"{RUN_BASE}/{short}-{checkout}"


def cgroup(instance: str) -> str:
    """The instance's throttle cgroup (scripts/throttle)."""
    return f"pfslab-throttle-{instance}"


def mount_path(mount: str, checkout: str) -> str:
    """A local lab's common mount path: the lab file's, per checkout."""
    return f"{mount}-{checkout}"


#: A run directory's name: the UTC start time, a suffix of letters, digits and '-'
#: (what kind of run), and '+' for each run that started in the same second.
RUN_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z[A-Za-z0-9-]*\+*$")


def slurm_cluster(lab: str) -> str:
    """A lab's Slurm ClusterName (also its partition's unless the lab names one): the
    lab's name with every character but letters, digits and '_' made '_'. Slurm keeps
    the cluster name in file names and in slurmdbd's table names, where '.', '+' and
    '-' are not allowed; a lab name is at most 40 characters, so is this."""
    return re.sub(r"[^a-z0-9_]", "_", lab.lower())


def run_name(started: float, suffix: str = "") -> str:
    """The name of a run that started at ``started`` (seconds since the epoch)."""
    import time

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started)) + suffix


def run_name_problem(name: str) -> str | None:
    if not RUN_NAME.match(name):
        return f"run name {name!r} is not a UTC time such as 20261124T101500Z, a suffix of letters, digits and '-', and '+'s"
    return None


def login_link(prefix: str) -> str:
    """The hosts lab's link from this machine to its login host (scripts/hosts)."""
    return "ph-" + prefix[4:]


def ifname_problem(name: str) -> str | None:
    """Why the kernel (or the kit's scripts, which read names as words) would refuse
    ``name`` as an interface name."""
    if not 0 < len(name.encode()) <= IFNAME_MAX:
        return f"interface name {name!r} is not 1-{IFNAME_MAX} bytes"
    if not _IFNAME.match(name):
        return f"interface name {name!r} is not lower-case letters, digits and '-' starting with a letter"
    return None


def file_name_problem(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a namespace's or cgroup's name (one path component)."""
    if not 0 < len(name.encode()) <= NAME_MAX:
        return f"{what} {name!r} is not 1-{NAME_MAX} bytes"
    if name in (".", "..") or not _FILE_NAME.match(name):
        return f"{what} {name!r} holds characters other than letters, digits and . _ + -"
    return None


def run_root_problem(path: str) -> str | None:
    if len(path) > RUN_ROOT_MAX or not path.startswith(f"{RUN_BASE}/"):
        return f"run root {path!r} is not under {RUN_BASE} in at most {RUN_ROOT_MAX} characters"
    return file_name_problem(path.rsplit("/", 1)[1], "run root")


def main(argv: list[str]) -> int:
    """``python3 -m pfslab.names checkout-problem PATH``: the shell's way to ask before
    the kit's environment exists (make demo checks its checkout before installing);
    ``slurm-cluster LAB``: the slurm role's cluster name, on nodes without the kit's
    environment; ``run-name-problem NAME``: why a run name a login node reports is not
    one the kit makes (nothing, status 0, when it is)."""
    if len(argv) == 2 and argv[0] == "slurm-cluster":
        print(slurm_cluster(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "run-name-problem":
        problem = run_name_problem(argv[1])
        if problem:
            print(problem)
            return 2
        return 0
    if len(argv) != 2 or argv[0] != "checkout-problem":
        print("usage: python3 -m pfslab.names checkout-problem PATH | slurm-cluster LAB | run-name-problem NAME")
        return 2
    problem = checkout_path_problem(Path(argv[1]))
    if problem:
        print(problem)
        return 2
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
