"""Spreading threads over client nodes the way the seeds did.

The seeds ran more threads than they had clients by placing them round robin:
"32 threads = 2 threads per node ... 1024 = 64 per node" (PixStor, 16 clients),
"64 threads = 2 threads per node" (BeeGFS and NSS, 32 clients). Thread i runs on
client i mod N; the hostfiles and IOzone thread lists below encode exactly that.
"""

from __future__ import annotations

from collections.abc import Sequence


def per_client(threads: int, clients: int) -> list[int]:
    """Threads on each client, round robin: client k gets ceil or floor of threads/clients."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    if clients < 1:
        raise ValueError(f"there must be at least one client, not {clients}")
    base, extra = divmod(threads, clients)
    return [base + (1 if k < extra else 0) for k in range(clients)]


def round_robin(threads: int, hosts: Sequence[str]) -> list[str]:
    """The host of each thread, in thread order."""
    if not hosts:
        raise ValueError("there must be at least one client")
    return [hosts[i % len(hosts)] for i in range(threads)]


def hostfile(threads: int, hosts: Sequence[str], *, slots: bool = True) -> str:
    """An Open MPI hostfile for ``threads`` ranks over ``hosts``.

    With ``slots`` each used host appears once with its share (``host slots=k``),
    which with ``--map-by node`` places ranks round robin. Without, one line per
    rank in round-robin order (the seeds' ``my_hosts.$Threads`` files).
    """
    if slots:
        counts = per_client(threads, len(hosts))
        return "".join(f"{h} slots={c}\n" for h, c in zip(hosts, counts) if c)
    return "".join(f"{h}\n" for h in round_robin(threads, hosts))


def iozone_threadlist(threads: int, hosts: Sequence[str], workdir: str, iozone: str) -> str:
    """IOzone's ``-+m`` file: one line per thread, ``host workdir iozone-path``, round robin."""
    return "".join(f"{h} {workdir} {iozone}\n" for h in round_robin(threads, hosts))
