"""MPI options against the locked Open MPIs' component lists (pfslab/mpi_options.py), and
the labs' launchers against their fabrics (registry/fabrics.json).

spack/openmpi-components.json is derived from Open MPI's source at the tags the lock
builds (its sources name repo, tag and commit); the checks here hold it to facts of
those versions that do not depend on the derivation: Open MPI 5 removed btl openib and
renamed PRRTE's rsh launcher to ssh (rsh stays an alias), 4.1 still has both.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest

from pfslab import fabric, labs, mpi_options

V4, V5 = "4.1.8", "5.0.8"
ALL = frozenset({"ucx", "ofi", "verbs"})


def test_the_data_names_its_sources_at_full_commits() -> None:
    data = json.loads(mpi_options.DATA.read_text())
    assert sorted(data["versions"]) == [V4, V5]
    for version, entry in data["versions"].items():
        for source in entry["sources"]:
            assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), version
            assert source["repo"] in ("open-mpi/ompi", "openpmix/prrte")
        assert entry["sources"][0]["tag"] == f"v{version}"


def test_the_locked_open_mpis_are_the_versions_the_data_describes() -> None:
    lock = json.loads(mpi_options.LOCK.read_text())
    nodes = lock["concrete_specs"]
    ompi = {n["version"]: n for n in nodes.values() if n["name"] == "openmpi"}
    assert sorted(ompi) == mpi_options.versions()
    # 5.0.8's mpirun is the lock's PRRTE: the data must be that PRRTE's.
    prrte = [nodes[d["hash"]]["version"] for d in ompi[V5]["dependencies"] if nodes[d["hash"]]["name"] == "prrte"]
    data = json.loads(mpi_options.DATA.read_text())["versions"][V5]
    assert prrte == [data["runtime"]["prrte"]] == [data["sources"][1]["tag"].lstrip("v")]


@pytest.mark.parametrize(
    ("version", "fabrics", "line", "problem"),
    [
        (V4, ALL, "mpirun -machinefile h --map-by node -np 4 -mca btl openib,self", None),
        (V4, frozenset({"ucx", "ofi"}), "mpirun -np 4 -mca btl openib,self", "btl/openib needs fabrics=verbs"),
        (V5, ALL, "mpirun -np 4 -mca btl openib,self", "Open MPI 5.0.8 has no btl component 'openib'"),
        (V5, ALL, "mpirun -np 4 --mca btl_openib_allow_ib 1", "btl framework has no component that 'btl_openib_allow_ib'"),
        (V4, ALL, "mpirun -np 4 --mca btl_openib_allow_ib 1", None),
        (V5, frozenset(), "mpirun -np 4 --mca pml ucx", "pml/ucx needs fabrics=ucx"),
        (V5, frozenset(), "mpirun -np 4 --mca pml ^ucx", None),  # excluding what is not built is allowed
        (V5, frozenset(), "mpirun -np 4 --mca pml ^uxc", "no pml component 'uxc'"),
        (V5, frozenset({"ucx"}), "mpirun --allow-run-as-root -np 4 --hostfile h --mca pml ucx --oversubscribe", None),
        (V5, frozenset(), "mpirun -np 4 --mca plm_rsh_agent ssh", None),  # PRRTE: rsh is an alias of ssh
        (V5, frozenset(), "mpirun -np 4 --mca oob_tcp_if_include eth0", None),  # a registered synonym
        (V5, frozenset(), "mpirun -np 4 --mca oob_tcp_bogus 1", "no framework or registered parameter"),
        (V4, frozenset(), "mpirun -np 4 --prefix /x --bogus-option", "has no option '--bogus-option'"),
        (V5, frozenset(), "mpirun -np 4 -machinefile h -map-by node", None),  # one dash, PRRTE converts
    ],
)
def test_check_command(version: str, fabrics: frozenset[str], line: str, problem: str | None) -> None:
    found = mpi_options.check_command(mpi_options.load(version, fabrics), shlex.split(line + " ior -w"))
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found


def test_the_options_after_the_program_are_the_programs() -> None:
    mpi = mpi_options.load(V5)
    assert mpi_options.check_command(mpi, ["mpirun", "-np", "2", "ior", "--bogus", "-mca", "btl", "openib"]) == []


def test_environment_settings_are_checked_like_mca_options() -> None:
    mpi = mpi_options.load(V5, frozenset({"ofi"}))
    assert mpi_options.check_env(mpi, {"OMPI_MCA_pml": "cm", "OMPI_MCA_mtl": "ofi", "FI_PROVIDER": "efa"}) == []
    (problem,) = mpi_options.check_env(mpi, {"OMPI_MCA_pml": "ucx"})
    assert problem.startswith("OMPI_MCA_pml=ucx: ") and "pml/ucx needs fabrics=ucx" in problem


# ---- the labs' launchers ----------------------------------------------------------------------

def launchers(lab: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, line) of every mpirun line a lab's jobs run."""
    own = lab.get("launcher", {})
    out = [("launcher.mpirun", str(own["mpirun"]))] if own.get("mpirun") else []
    for w in lab.get("workloads", []):
        if w.get("launcher"):
            out.append((f"workload {w['id']}", w["launcher"]))
    return out


@pytest.mark.parametrize("name", labs.lab_names())
def test_no_launcher_has_a_prefix_the_toolchain_does_not_install(name: str) -> None:
    """--prefix names where a site installed Open MPI; the kit's Open MPI starts its
    remote daemons from its own prefix (openmpi +orterunprefix, prrte +prefix_by_default)."""
    for where, line in launchers(labs.load(name)):
        assert "--prefix" not in shlex.split(line), f"{name} {where}: {line}"


@pytest.mark.parametrize("name", labs.lab_names())
def test_a_lab_on_a_fabric_where_tcp_is_a_fallback_selects_the_fabrics_transport(name: str) -> None:
    """So that a node without the fabric stops MPI with an error instead of running it
    over TCP (scripts/preflight then shows which pair and what was selected)."""
    lab = labs.load(name)
    spec = fabric.fabric(lab["network"].get("fabric") or "ethernet")
    env = lab.get("launcher", {}).get("env", {})
    for where, line in launchers(lab):
        mca = mpi_options.mca_settings(line, env)
        if not spec["tcp_is_fallback"]:
            continue
        if spec["transport"] == "ucx":
            assert mca.get("pml") == "ucx", f"{name} {where}: an {lab['network']['fabric']} lab must select pml ucx: {line}"
        else:
            assert (mca.get("pml"), mca.get("mtl")) == ("cm", "ofi"), f"{name} {where}: must select pml cm, mtl ofi"
            assert env.get("FI_PROVIDER") == spec["provider"], f"{name}: FI_PROVIDER must be {spec['provider']}"


@pytest.mark.parametrize("name", labs.lab_names())
def test_a_seed_line_kept_beside_a_mapped_one_has_its_deviation_said(name: str) -> None:
    lab = labs.load(name)
    launcher = lab.get("launcher", {})
    seeds = [w for w in lab.get("workloads", []) if w.get("seed_launcher")]
    if launcher.get("seed_mpirun") or seeds:
        assert len(launcher.get("deviation", "")) > 80, f"{name}: say why the lines differ (launcher.deviation)"
        assert launcher.get("seed_mpirun") != launcher.get("mpirun")
    for w in seeds:
        assert w["seed_launcher"] != w["launcher"], f"{name}/{w['id']}"
