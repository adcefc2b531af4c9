"""IOR and mdtest options against the IOR release that runs them (pfslab/tools/ior_options.py,
spack/ior-options.json), IOzone sizes as IOzone reads them (pfslab/tools/iozone_options.py),
and the toolchain view each lab runs (pfslab/toolchain.py).

spack/ior-options.json is derived from IOR's source at tags 3.3.0 and 4.0.0 (its sources
name repo, tag, commit and files); the checks here hold it to facts of those releases
that do not depend on the derivation: 3.3.0 reads BeeGFS striping as -O directives and
stops without BeeGFS support ("ior was not compiled with BeeGFS support"), 4.0.0 has
them as --posix.beegfs.* options only where built with BeeGFS and stops at the old
directive (Unrecognized parameter "beegfsNumTargets").
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from pfslab import deviations, labs, toolchain, workloads
from pfslab.tools import ior_options, iozone_options
from pfslab.units import format_size

V3, V4 = "3.3.0", "4.0.0"
BEEGFS = frozenset({"beegfs"})
SEED_IOR = "-w -r -i 3 -d 3 -e -O beegfsNumTargets=33,beegfsChunkSize=2M -o /mnt/beegfs/benchmark/ior.out -s 1 -g -t 2M -b 128G"
CLIENTS = [workloads.Client(f"cli{i}", f"10.0.0.{i + 1}") for i in range(32)]


def ctx(program: str = "ior") -> workloads.Context:
    return workloads.Context(clients=CLIENTS, scratch_dir="/fs/bench/x", work_dir="/stage", tool_path=f"/view/bin/{program}")


def after_program(command: str, program: str) -> list[str]:
    tokens = shlex.split(command)
    return tokens[tokens.index(f"/view/bin/{program}") + 1:]


# ---- the data --------------------------------------------------------------------------

def test_the_data_names_its_sources_at_full_commits_of_the_toolchains_releases() -> None:
    data = json.loads(ior_options.DATA.read_text())
    assert ior_options.versions() == [V3, V4]
    for version, entry in data["versions"].items():
        (source,) = entry["sources"]
        assert source["repo"] == "hpc/ior" and source["tag"] == version
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), version
        assert any(p.startswith("src/parse_options.c") for p in source["paths"])
    # The releases the toolchain's views hold, and no other.
    assert sorted({toolchain.versions(v)["ior"] for v in toolchain.views()}) == ior_options.versions()


def test_the_releases_beegfs_striping_is_where_each_release_reads_it() -> None:
    v3, v4 = ior_options.load(V3, BEEGFS), ior_options.load(V4, BEEGFS)
    assert v3.directive("beegfsNumTargets") == {"needs": ["beegfs"]}
    assert v3.directive("beegfschunksize") == {"needs": ["beegfs"]}  # DecodeDirective: strcasecmp
    assert v3.option("ior", "long", "posix.beegfs.NumTargets") is None
    assert v4.directive("beegfsNumTargets") is None
    assert v4.option("ior", "long", "posix.beegfs.NumTargets") == {"takes": "value", "needs": ["beegfs"]}
    assert v4.option("mdtest", "long", "posix.odirect") == {"takes": "none"}  # module options: both tools


@pytest.mark.parametrize(
    ("version", "features", "args", "problem"),
    [
        (V3, BEEGFS, SEED_IOR, None),
        (V3, frozenset(), SEED_IOR, "-O beegfsNumTargets of IOR 3.3.0 needs a build with beegfs support"),
        (V4, BEEGFS, SEED_IOR, 'IOR 4.0.0 has no directive \'beegfsNumTargets\' (it stops: Unrecognized parameter "beegfsNumTargets")'),
        (V4, BEEGFS, "-w -r --posix.beegfs.NumTargets=33 --posix.beegfs.ChunkSize=2M -t 2M -b 1g", None),
        (V4, frozenset(), "-w --posix.beegfs.NumTargets=33", "needs a build with beegfs support"),
        (V3, frozenset(), "-a POSIX -v -i 1 -d 3 -e -k -o /f -w -s 1 -t 8m -b 128G", None),
        (V4, frozenset(), "-a POSIX -w -e -t 512k -b 1m -i 10000 --posix.odirect", None),
        (V3, frozenset(), "-w -O useO_DIRECT=1,checkRead=1", "no directive 'useO_DIRECT'"),  # only inside the fall-through
        (V4, frozenset(), "-w -O --posix.odirect=1", None),
        (V4, frozenset(), "-w -vv -t2M", None),
        (V4, frozenset(), "-w -q", "IOR 4.0.0 has no option -q (ior)"),  # 3.3.0's quitOnError, gone in 4.0.0
        (V3, frozenset(), "-w /mnt/x", "takes no argument '/mnt/x'"),
    ],
)
def test_check_ior(version: str, features: frozenset[str], args: str, problem: str | None) -> None:
    found = ior_options.check_args(ior_options.load(version, features), "ior", shlex.split(args))
    if problem is None:
        assert found == []
    else:
        assert found and problem in found[0], found


@pytest.mark.parametrize("version", [V3, V4])
def test_the_seeds_mdtest_lines_are_accepted_by_both_releases(version: str) -> None:
    mdtest = ior_options.load(version)
    for line in ("-i 3 -b 2048 -z 1 -L -I 1024 -y -u -t -F -d /x", "-v -d /x -i 1 -b 2 -z 1 -L -I 1024 -y -u -t -F -w 4K -e 4K"):
        assert ior_options.check_args(mdtest, "mdtest", shlex.split(line)) == []
    assert ior_options.check_args(mdtest, "mdtest", ["-Q"]) == [f"IOR {version} has no option -Q (mdtest)"]


@pytest.mark.parametrize("version", [V3, V4])
def test_beegfs_striping_is_written_in_the_syntax_of_the_release(version: str) -> None:
    ior = ior_options.load(version, BEEGFS)
    striping = ior_options.beegfs_striping(ior, "33", "2M")
    assert striping == {V3: "-O beegfsNumTargets=33,beegfsChunkSize=2M",
                        V4: "--posix.beegfs.NumTargets=33 --posix.beegfs.ChunkSize=2M"}[version]
    assert ior_options.check_args(ior, "ior", shlex.split(striping)) == []


# ---- every lab's lines, rendered for each view -------------------------------------------

def every_case() -> list[tuple[str, str, workloads.Case]]:
    """(lab, program, case) of every IOR and mdtest case of every lab (local's imports too)."""
    return [(name, tool, case) for name in labs.lab_names() for tool in ior_options.TOOLS
            for case in workloads.cases(tool, [name])]


def rendered_args(lab: dict[str, Any], case: workloads.Case, program: str) -> list[list[str]]:
    return [after_program(step.command, program) for step in workloads.render(lab, case, ctx(program)).steps
            if step.kind == "run"]


@pytest.mark.parametrize("view", ["own", "default", "seed"])
def test_every_labs_ior_and_mdtest_lines_render_for_the_release_that_runs_them(view: str) -> None:
    """Every lab (local and its imported shapes too), rendered for its own view and for
    each view it could be switched to: the release in that view accepts every line."""
    problems: dict[str, set[str]] = {}
    checked = 0
    for name, program, case in every_case():
        lab = labs.load(name)
        if view != "own":
            lab = {**lab, "benchmark": {**lab.get("benchmark", {}), "toolchain": view}}
        ior = ior_options.for_lab(lab)
        if program == "mdtest" and case.mode == "full" and case.threads > 64:
            continue  # the same line as the smaller sweep points, other numbers
        fs_type = lab["filesystem"]["type"]
        if fs_type not in workloads.find(lab, case.workload).get("filesystems", [fs_type]):
            continue  # never runs there (rfm.py skips it: local's import of the BeeGFS IOR line)
        for args in rendered_args(lab, case, program):
            checked += 1
            for problem in ior_options.check_args(ior, program, args):
                problems.setdefault(problem, set()).add(f"{name} ({case.workload})")
    assert checked > 200
    assert not problems, "\n".join(f"{p}: {', '.join(sorted(w))}" for p, w in sorted(problems.items()))


def test_a_step_kept_beside_the_seeds_renders_as_the_seed_with_the_seeds_ior() -> None:
    """seed_args is the source's line; args, rendered for IOR 3.3.0 (the seed's), must give
    the same line, and rendered for 4.0.0, one 4.0.0 reads."""
    seen = 0
    for name in labs.lab_names():
        lab = labs.load(name)
        for workload in lab.get("workloads", []):
            for spec in workload["steps"]:
                if not isinstance(spec, dict) or "seed_args" not in spec:
                    continue
                seen += 1
                for view, version in (("seed", V3), ("default", V4)):
                    as_lab = {**lab, "benchmark": {**lab.get("benchmark", {}), "toolchain": view}}
                    case = workloads.Case(name, workload["id"], 4, "full")
                    one = {**workload, "steps": [spec]}
                    (args,) = [after_program(s.command, "ior") for s in workloads.render_workload(as_lab, one, case, ctx()).steps]
                    seed = {**workload, "steps": [{**spec, "args": spec["seed_args"]}]}
                    (seed_line,) = [after_program(s.command, "ior") for s in workloads.render_workload(as_lab, seed, case, ctx()).steps]
                    if version == V3:
                        assert args == seed_line, f"{name}/{workload['id']}"
                    assert ior_options.check_args(ior_options.for_lab(as_lab), workload["tool"], args) == []
    assert seen >= 1


# ---- IOzone --------------------------------------------------------------------------------

@pytest.mark.parametrize(("nbytes", "written"), [(8 * 2**40, "8192g"), (2**40, "1024g"), (32 * 2**30, "32g"),
                                                  (2**20, "1m"), (4096, "4k"), (1000, "1000")])
def test_iozone_sizes_use_k_m_g_only(nbytes: int, written: str) -> None:
    assert iozone_options.size(nbytes) == written


def test_other_tools_sizes_keep_t_and_p() -> None:
    assert format_size(8 * 2**40) == "8t" and format_size(2**50) == "1p"  # IOR and fio read them


@pytest.mark.parametrize(("line", "bad"), [("-i 0 -r 1m -s 8t -t 1", "-s 8t"), ("-i 0 -r 1t -s 8g", "-r 1t"),
                                           ("-i 0 -r 4K -s 4G -t 2", None), ("-s 1024", None), ("-s 2.5g", "-s 2.5g")])
def test_iozone_size_check(line: str, bad: str | None) -> None:
    found = iozone_options.check_args(shlex.split(line))
    assert (found == []) if bad is None else (len(found) == 1 and found[0].startswith(f"iozone {bad}:")), found


def test_every_labs_iozone_lines_use_sizes_iozone_reads() -> None:
    problems: set[str] = set()
    checked = 0
    for name in labs.lab_names():
        lab = labs.load(name)
        for case in workloads.cases("iozone", [name]):
            for step in workloads.render(lab, case, ctx()).steps:
                if step.kind == "run":
                    checked += 1
                    problems.update(f"{name}: {p}" for p in iozone_options.check_args(shlex.split(step.command)))
    assert checked > 100
    assert not problems, "\n".join(sorted(problems))


# ---- the toolchain view of each lab ----------------------------------------------------------

def test_the_schemas_toolchain_values_are_spacks_views() -> None:
    assert labs.schema_enum("benchmark", "toolchain") == toolchain.views() == ["default", "seed"]
    assert toolchain.root("default") == "/opt/pfslab/view" and toolchain.root("seed") == "/opt/pfslab/view-seed"
    seed = toolchain.versions("seed")
    assert (seed["ior"], seed["mdtest"], seed["openmpi"]) == (V3, V3, "4.1.8")
    default = toolchain.versions("default")
    assert (default["ior"], default["mdtest"], default["openmpi"]) == (V4, V4, "5.0.8")


def test_every_tool_version_a_source_states_and_the_lab_does_not_run_is_declared() -> None:
    """pixstor-capex (seeds 000/004): IOR and mdtest as the seeds; Open MPI, fio and IOzone
    not, each with the reason spack.yaml's '# seed:' line gives."""
    found = {d.what.split()[0]: d for d in deviations.toolchain_versions(labs.load("pixstor-capex"))}
    assert sorted(found) == ["fio", "iozone", "openmpi"]
    assert (found["openmpi"].seed, found["openmpi"].kit) == ("openmpi 4.0.1", "openmpi 4.1.8")
    assert found["openmpi"].what == "openmpi version (benchmark.toolchain: the seed view, /opt/pfslab/view-seed)"
    assert "Spack has no 3.7" in found["fio"].why
    # Switched to the default view, IOR and mdtest 4.0.0 are departures too.
    lab = labs.load("beegfs-medium")
    default = {**lab, "benchmark": {**lab["benchmark"], "toolchain": "default"}}
    assert {d.seed for d in deviations.toolchain_versions(default)} >= {"ior 3.3.0", "mdtest 3.3.0"}
    # ... and `pfslab lab deviations` and provenance show them, with the step kept beside the seed's.
    stated = {d.what.split(" (")[0] for d in deviations.derived(labs.load("beegfs-small"))}
    assert {"ior arguments of ior-n1", "openmpi version", "iozone version"} <= stated


def test_a_launcher_deviation_names_the_open_mpi_its_lab_runs() -> None:
    """A lab's launcher.deviation that says which Open MPI the kit's is speaks of the one
    the lab's view holds (the text is shown with every run's report)."""
    named = 0
    for name in labs.lab_names():
        lab = labs.load(name)
        text = " ".join(lab.get("launcher", {}).get("deviation", "").split())
        runs = toolchain.tool_version(lab, "openmpi")
        for version in re.findall(r"kit's Open MPI (\d+\.\d+\.\d+)", text):
            named += 1
            assert version == runs, f"{name}: launcher.deviation names the kit's Open MPI {version}; the lab runs {runs}"
    assert named >= 2


def test_the_view_travels_with_the_resolved_lab_not_the_users_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote lab's login node gets the resolved lab (build/<lab>/lab.json, `pfslab lab
    show`), not the user's environment: the view comes from it."""
    from pfslab import layout, rfm_paths

    monkeypatch.delenv("PFSLAB_VIEW", raising=False)
    monkeypatch.setenv("PFSLAB_TOOL_PATH", "/site/bin")
    monkeypatch.setenv("PATH", "/usr/bin")
    for name, view in (("azure-beegfs-medium", "/opt/pfslab/view-seed"), ("aws-nfs", "/opt/pfslab/view")):
        shipped = json.loads(json.dumps(layout.resolved(labs.load(name))))
        assert shipped["benchmark"]["toolchain"] == ("seed" if view.endswith("seed") else "default")
        built = rfm_paths.BUILT_TOOLS / Path(view).name
        assert rfm_paths.tool_search_path(shipped) == f"/site/bin:{view}/bin:{built}/bin:/usr/bin"


def test_a_runs_provenance_records_the_view_and_the_version_departures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pfslab import provenance

    monkeypatch.delenv("PFSLAB_RUN_DIR", raising=False)
    data = provenance.record(tmp_path, "beegfs-small", "/nonexistent")
    assert data["toolchain"]["view"] == "seed" and data["toolchain"]["versions"]["ior"] == V3
    whats = {d["what"].split(" (")[0] for d in data["deviations"]}
    assert {"ior arguments of ior-n1", "openmpi version", "iozone version"} <= whats
    assert json.loads((tmp_path / "provenance.json").read_text())["toolchain"] == data["toolchain"]


@pytest.mark.parametrize(("fs_type", "features"), [("beegfs", BEEGFS), ("cephfs", frozenset()), ("nfs", frozenset())])
def test_a_labs_ior_features_are_its_familys_toolchain_variants(fs_type: str, features: frozenset[str]) -> None:
    assert ior_options.features_of({"filesystem": {"type": fs_type}}) == features
