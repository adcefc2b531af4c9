"""Which transport Open MPI selected in a two-rank probe (pfslab/fabric.py), per fabric.

The outputs below are what Open MPI 4.1.8 and 5.0.8 print with the probe's verbose
settings (the strings are those of their source: pml_base_select.c "select: component
%s selected", btl_base_select.c "select: init of component %s returned success",
mtl_ofi_component.c "mtl:ofi:prov: %s" (4.1) / "mtl:ofi:provider: %s" (5.0), UCX's
"ep_cfg[N]: tag(...)" info line), each behind its rank's [host:pid] prefix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfslab import fabric, labs

UCX_IB = """\
[cli0:101] select: initializing pml component ucx
[cli0:101] select: component ucx selected
[cli1:202] select: component ucx selected
[1700000000.000001] [cli0:101:0]     ucp_worker.c:1888 UCX  INFO  ep_cfg[1]: tag(self/memory cma/memory rc_mlx5/mlx5_0:1);
[1700000000.000002] [cli1:202:0]     ucp_worker.c:1888 UCX  INFO  ep_cfg[1]: tag(self/memory rc_mlx5/mlx5_0:1);
"""
UCX_TCP = UCX_IB.replace("rc_mlx5/mlx5_0:1", "tcp/ib0")
OB1_TCP = """\
[cli0:101] select: init of component self returned success
[cli0:101] select: init of component vader returned success
[cli0:101] select: init of component tcp returned success
[cli0:101] select: component ob1 selected
[cli1:202] select: init of component self returned success
[cli1:202] select: init of component tcp returned success
[cli1:202] select: component ob1 selected
"""
EFA_41 = """\
[cli0:101] /build/ompi/mca/mtl/ofi/mtl_ofi_component.c:333: mtl:ofi:prov: efa
[cli0:101] select: component cm selected
[cli1:202] /build/ompi/mca/mtl/ofi/mtl_ofi_component.c:333: mtl:ofi:prov: efa
[cli1:202] select: component cm selected
"""
EFA_50 = EFA_41.replace("mtl:ofi:prov: efa", "mtl:ofi:provider: efa")
OFI_TCP = EFA_50.replace("provider: efa", "provider: tcp;ofi_rxm")


def test_every_fabric_of_the_schema_has_its_transport() -> None:
    schema = json.loads(labs.SCHEMA_PATH.read_text())
    names = set(schema["$defs"]["network"]["properties"]["fabric"]["enum"])
    assert names == set(fabric.fabrics())
    for name, spec in fabric.fabrics().items():
        assert spec["transport"] in {"ucx", "ofi", "tcp"}, name
        assert (spec["transport"] == "tcp") != spec["tcp_is_fallback"], name
        if spec["transport"] == "ofi":
            assert spec["provider"], name


def test_parse_reads_each_rank_apart() -> None:
    sel = fabric.parse(UCX_IB + OB1_TCP.replace("cli", "srv"))
    assert sel["cli0"].pml == "ucx" and sel["cli0"].ucx == ["cma/memory", "rc_mlx5/mlx5_0:1"]
    assert sel["srv0"].pml == "ob1" and sel["srv0"].btls == ["self", "vader", "tcp"]
    assert fabric.parse(EFA_41)["cli1"].provider == fabric.parse(EFA_50)["cli1"].provider == "efa"


@pytest.mark.parametrize(
    ("fab", "output", "passes", "seen"),
    [
        ("infiniband", UCX_IB, True, "cli0: pml ucx over cma/memory,rc_mlx5/mlx5_0:1"),
        ("infiniband", UCX_TCP, False, "cli0: pml ucx over cma/memory,tcp/ib0"),
        ("infiniband", OB1_TCP, False, "cli0: pml ob1 with btl tcp; cli1: pml ob1 with btl tcp"),
        ("roce", UCX_IB, True, "pml ucx"),
        ("efa", EFA_41, True, "cli0: pml cm with mtl ofi provider efa"),
        ("efa", EFA_50, True, "cli1: pml cm with mtl ofi provider efa"),
        ("efa", OFI_TCP, False, "provider tcp;ofi_rxm"),
        ("efa", OB1_TCP, False, "pml ob1 with btl tcp"),
        ("ethernet", OB1_TCP, True, "pml ob1 with btl tcp"),
        ("ipoib", OB1_TCP, True, "pml ob1 with btl tcp"),
        ("veth", UCX_IB, True, "pml ucx"),
    ],
)
def test_judge_passes_only_the_fabrics_transport(fab: str, output: str, passes: bool, seen: str) -> None:
    ok, line = fabric.judge(fab, ("cli0", "cli1"), fabric.parse(output))
    assert ok is passes, line
    assert line.startswith(f"MPI between cli0 and cli1 {'uses' if passes else 'does NOT use'} the {fab} fabric: ")
    assert seen in line
    assert ("(wanted " in line) is (not passes)


def test_a_rank_that_printed_nothing_fails_even_on_ethernet() -> None:
    only_one = "\n".join(line for line in OB1_TCP.splitlines() if "cli1" not in line)
    ok, line = fabric.judge("ethernet", ("cli0", "cli1"), fabric.parse(only_one))
    assert not ok and "cli1: no output from its rank" in line


def test_an_unknown_fabric_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(fabric.FabricError, match=r"network.fabric 'myrinet' is not in registry/fabrics.json \(known: efa, "):
        fabric.judge("myrinet", ("a", "b"), {})


def test_the_probe_starts_two_ranks_with_the_labs_own_line() -> None:
    cmd = fabric.probe_command({"mpirun": "mpirun -np {np} --hostfile {hostfile} --map-by node"}, "/tmp/h", "/v/bin/ior")
    assert cmd == ["mpirun", "-np", "2", "--hostfile", "/tmp/h", "--map-by", "node", "/v/bin/ior", "-a", "DUMMY",
                   "-w", "-r", "-t", "1k", "-b", "1k", "-i", "1"]
    with pytest.raises(fabric.FabricError, match="no launcher.mpirun line"):
        fabric.probe_command({}, "/tmp/h", "ior")


INVENTORY = {"nodes": [{"name": "cli0", "address": "10.0.0.1"}, {"name": "cli1", "address": "10.0.0.2"}],
             "launcher": {"mpirun": "mpirun -np {np} --hostfile {hostfile}"}}


def _tools(tmp_path: Path, *names: str) -> str:
    """A directory holding only the named commands (each exits 0)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in names:
        tool = bindir / name
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    return str(bindir)


@pytest.mark.parametrize(("installed", "missing"), [((), "ior"), (("ior",), "mpirun")])
def test_a_node_without_mpi_or_ior_has_nothing_to_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: tuple[str, ...], missing: str,
) -> None:
    """No MPI there: no transport to judge (preflight says SKIP with this reason), not a pass."""
    monkeypatch.setenv("PATH", _tools(tmp_path, *installed))
    monkeypatch.setenv("PFSLAB_VIEW", str(tmp_path / "no-view"))
    monkeypatch.delenv("PFSLAB_TOOL_PATH", raising=False)
    with pytest.raises(fabric.ProbeUnavailable, match=f"^{missing} is not installed .*'make toolchain' installs"):
        fabric.run_probe({"network": {"fabric": "infiniband"}}, INVENTORY, "cli0", "cli1")
