"""Round-robin placement of threads over clients, as the seeds describe it."""

from __future__ import annotations

import pytest

from pfslab import distribution


@pytest.mark.parametrize(
    ("threads", "clients", "per_node"),
    [
        # PixStor: 16 clients, "32 threads = 2 threads per node ... 1024 threads = 64 per node".
        (32, 16, 2), (64, 16, 4), (128, 16, 8), (256, 16, 16), (512, 16, 32), (1024, 16, 64),
        # BeeGFS: 32 clients, "64 threads = 2 threads per node ... 2048 threads = 64 per node".
        (64, 32, 2), (2048, 32, 64),
    ],
)
def test_seed_thread_counts_spread_evenly(threads: int, clients: int, per_node: int) -> None:
    assert distribution.per_client(threads, clients) == [per_node] * clients


def test_fewer_threads_than_clients_use_the_first_clients() -> None:
    assert distribution.per_client(3, 16) == [1, 1, 1] + [0] * 13


def test_uneven_counts_differ_by_at_most_one() -> None:
    counts = distribution.per_client(10, 4)
    assert counts == [3, 3, 2, 2] and sum(counts) == 10


def test_round_robin_puts_consecutive_threads_on_different_nodes() -> None:
    assert distribution.round_robin(5, ["a", "b"]) == ["a", "b", "a", "b", "a"]


def test_hostfile_with_slots_and_one_line_per_rank() -> None:
    assert distribution.hostfile(3, ["n1", "n2"]) == "n1 slots=2\nn2 slots=1\n"
    assert distribution.hostfile(1, ["n1", "n2"]) == "n1 slots=1\n"
    assert distribution.hostfile(3, ["n1", "n2"], slots=False) == "n1\nn2\nn1\n"


def test_iozone_threadlist_has_one_line_per_thread() -> None:
    text = distribution.iozone_threadlist(3, ["10.0.0.1", "10.0.0.2"], "/fs/dir", "/usr/bin/iozone")
    assert text.splitlines() == [
        "10.0.0.1 /fs/dir /usr/bin/iozone",
        "10.0.0.2 /fs/dir /usr/bin/iozone",
        "10.0.0.1 /fs/dir /usr/bin/iozone",
    ]


@pytest.mark.parametrize(("threads", "clients"), [(0, 2), (2, 0)])
def test_nonsense_is_refused(threads: int, clients: int) -> None:
    with pytest.raises(ValueError):
        distribution.per_client(threads, clients)
