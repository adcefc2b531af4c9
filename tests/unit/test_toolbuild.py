"""`make tools` (pfslab/toolbuild.py): IOR, mdtest and IO500 from pinned commits, no Spack.

The build test compiles the real tools from a mirror of their repositories (git bundles,
../shared/mirror/git next to the checkout or PFSLAB_TEST_TOOLS_MIRROR) into a temporary
prefix and runs them at tiny scale through the kit's parsers; with no mirror it is
skipped with the reason printed. The refusal tests make their own scratch bundles.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfslab import rfm_paths
from pfslab import toolbuild as tools
from pfslab.tools import ior as ior_parser
from pfslab.tools import mdtest as mdtest_parser

KIT = Path(__file__).resolve().parents[2]
REGISTRY = tools.load()
IOR_400 = REGISTRY.tools["ior-4.0.0"]


def _mirror() -> Path | None:
    configured = os.environ.get("PFSLAB_TEST_TOOLS_MIRROR")
    if configured and not Path(configured).is_dir():
        pytest.fail(f"PFSLAB_TEST_TOOLS_MIRROR={configured} is not a folder (of git bundles: hpc+ior.bundle, ...)")
    folder = Path(configured) if configured else KIT.parent / "shared" / "mirror" / "git"
    return folder if folder.is_dir() else None


def _run_tools(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pfslab.toolbuild", *map(str, args)], cwd=KIT,
                          capture_output=True, text=True, check=False, timeout=900)


def _git(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *map(str, args)], cwd=cwd,
                   check=True, capture_output=True)


def _scratch_bundle(tmp_path: Path, tag: str | None) -> Path:
    """A mirror folder whose hpc+ior.bundle is a scratch repository (optionally tagged like the pin)."""
    repo, mirror = tmp_path / "scratch", tmp_path / "mirror"
    repo.mkdir()
    mirror.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "bootstrap").write_text("#!/bin/sh\ntouch BUILT\n")
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "not IOR", cwd=repo)
    if tag:
        _git("tag", "-a", "-m", tag, tag, cwd=repo)
    _git("bundle", "create", mirror / "hpc+ior.bundle", "--all", cwd=repo)
    return mirror


def _error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if "error" in line]


def _assert_nothing_built(prefix: Path) -> None:
    assert not (prefix / "ior-4.0.0").exists()
    assert not (prefix / ".logs").exists()
    assert not list(prefix.glob(".work/*/BUILT"))


def test_registry_pins_full_commits_and_io500_deps() -> None:
    for tool in REGISTRY.tools.values():
        for pin in tool.pins():
            assert len(pin.commit) == 40, (tool.name, pin)
    io500 = REGISTRY.tools["io500-sc25"]
    assert {p.repo.name for p in io500.deps} >= {"ior", "pfind"}
    assert REGISTRY.views["view"][0] == "ior-4.0.0" and REGISTRY.views["view-seed"] == ("ior-3.3.0",)


def test_io500_pins_agree_with_the_spack_recipe() -> None:
    """The same IO500 release pins the same IOR and pfind with Spack and with make tools."""
    recipe = (KIT / "spack" / "repo" / "spack_repo" / "pfslab" / "packages" / "io500" / "package.py").read_text()
    for tool in (t for t in REGISTRY.tools.values() if t.kind == "io500"):
        version = re.search(rf'version\(\s*"([^"]+)",[^)]*commit="{tool.pin.commit}"', recipe)
        assert version, f"the Spack io500 recipe has no version at {tool.pin.commit} ({tool.name})"
        resources = [dict(re.findall(r'(\w+)="([^"]*)"', block))
                     for block in re.findall(r"resource\((.*?)\)", recipe, re.S)]
        for dep in ("ior", "pfind"):
            pinned = {r["commit"] for r in resources
                      if r["name"] == dep and r.get("when", f"@{version.group(1)}") == f"@{version.group(1)}"}
            assert pinned == {tool.dep(dep).commit}, (tool.name, dep, pinned)


def test_registry_short_commit_refused(tmp_path: Path) -> None:
    data = json.loads(tools.TOOLS_FILE.read_text())
    data["tools"]["ior-4.0.0"]["commit"] = "967a9f65"
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(tools.ToolsError, match=r"tools\.ior-4\.0\.0\.commit '967a9f65' is not a full commit id"):
        tools.load(bad)


def test_tag_on_another_commit_refused_before_build(tmp_path: Path) -> None:
    mirror = _scratch_bundle(tmp_path, tag="4.0.0")
    prefix = tmp_path / "prefix"
    done = _run_tools("ior-4.0.0", "--mirror", mirror, "--prefix", prefix)
    assert done.returncode == 2, done.stderr
    [line] = _error_lines(done)
    assert line.startswith(f"[tools] error: ior-4.0.0: tag 4.0.0 in {mirror}/hpc+ior.bundle is commit ")
    assert line.endswith(f"registry/tools.json pins {IOR_400.pin.commit}; refusing to build")
    _assert_nothing_built(prefix)


def test_missing_commit_refused_before_build(tmp_path: Path) -> None:
    mirror = _scratch_bundle(tmp_path, tag=None)
    prefix = tmp_path / "prefix"
    done = _run_tools("ior-4.0.0", "--mirror", mirror, "--prefix", prefix)
    assert done.returncode == 2, done.stderr
    assert _error_lines(done) == [
        f"[tools] error: ior-4.0.0: {mirror}/hpc+ior.bundle has no commit {IOR_400.pin.commit} "
        f"(ior's pin in registry/tools.json); refusing to build"
    ]
    _assert_nothing_built(prefix)


def test_mirror_without_the_bundle_named(tmp_path: Path) -> None:
    done = _run_tools("ior-4.0.0", "--mirror", tmp_path, "--prefix", tmp_path / "prefix")
    assert done.returncode == 2
    assert _error_lines(done) == [
        f"[tools] error: TOOLS_MIRROR {tmp_path} holds no hpc+ior.bundle (nor hpc+ior.git, a bare repository) "
        f"for https://github.com/hpc/ior.git"
    ]


def test_unreachable_upstream_without_mirror_is_one_line(tmp_path: Path) -> None:
    # Upstream on a closed loopback port stands for "no internet" without sending anything out.
    data = json.loads(tools.TOOLS_FILE.read_text())
    data["repositories"]["ior"]["url"] = "http://127.0.0.1:9/hpc/ior.git"
    registry = tmp_path / "tools.json"
    registry.write_text(json.dumps(data))
    done = _run_tools("ior-4.0.0", "--registry", registry, "--prefix", tmp_path / "prefix")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()[-1:]
    assert line.startswith("[tools] error: cannot fetch http://127.0.0.1:9/hpc/ior.git (")
    assert line.endswith("and no TOOLS_MIRROR is given: without internet build from a local mirror, "
                         "make tools TOOLS_MIRROR=<folder of hpc+ior.bundle, IO500+io500.bundle, "
                         "VI4IO+pfind.bundle, VI4IO+cdcl-schema-tools.bundle>")
    assert len(_error_lines(done)) == 1


def test_unknown_tool_named(tmp_path: Path) -> None:
    done = _run_tools("ior-9", "--prefix", tmp_path)
    assert done.returncode == 2
    assert _error_lines(done) == [
        "[tools] error: unknown tool ior-9; registry/tools.json has ior-3.3.0, ior-4.0.0, io500-sc25"
    ]


def test_prepare_sh_pins_checked(tmp_path: Path) -> None:
    io500 = REGISTRY.tools["io500-sc25"]
    (tmp_path / "prepare.sh").write_text(f"IOR_HASH=5fcf0ba995f\nPFIND_HASH={io500.dep('pfind').commit[:11]}\n")
    with pytest.raises(tools.ToolsError, match=r"prepare.sh pins IOR_HASH=5fcf0ba995f, registry/tools.json's "
                                               r"with.ior is 8ab8f69b"):
        tools.check_prepare_pins(io500, tmp_path)
    (tmp_path / "prepare.sh").write_text(f"IOR_HASH={io500.dep('ior').commit[:14]}\n"
                                         f"PFIND_HASH={io500.dep('pfind').commit[:11]}\n")
    tools.check_prepare_pins(io500, tmp_path)


def test_failed_step_names_tool_step_status_and_log(tmp_path: Path) -> None:
    step = tools.Build(IOR_400, tmp_path, tmp_path / "home", tmp_path / "ior-4.0.0.log", 1)
    with pytest.raises(tools.BuildFailed) as failed:
        step.run("ior configure", ["sh", "-c", "echo configure: error: no MPI; exit 3"], tmp_path)
    assert str(failed.value) == f"ior-4.0.0: ior configure failed (exit 3); full log {tmp_path}/ior-4.0.0.log"
    assert "configure: error: no MPI" in (tmp_path / "ior-4.0.0.log").read_text()


def test_stamp_of_other_pins_or_another_mpi_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ior-4.0.0"
    (home / "bin").mkdir(parents=True)
    for program in IOR_400.links:
        (home / "bin" / program).write_text("#!/bin/sh\n")
        (home / "bin" / program).chmod(0o755)
    monkeypatch.setattr(tools, "mpi_identity", lambda: "/usr/bin/mpicc.openmpi: gcc -lmpi")
    stamp = {"pins": IOR_400.stamp(), "mpi": "/usr/bin/mpicc.openmpi: gcc -lmpi"}
    (home / tools.STAMP).write_text(json.dumps(stamp))
    assert tools.installed(IOR_400, tmp_path)
    monkeypatch.setattr(tools, "mpi_identity", lambda: "/usr/bin/mpicc.mpich: gcc -lmpich")
    assert not tools.installed(IOR_400, tmp_path)
    monkeypatch.setattr(tools, "mpi_identity", lambda: "/usr/bin/mpicc.openmpi: gcc -lmpi")
    (home / tools.STAMP).write_text(json.dumps(dict(stamp, pins=REGISTRY.tools["ior-3.3.0"].stamp())))
    assert not tools.installed(IOR_400, tmp_path)


def test_search_path_finds_built_tools_by_view_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for view in ("view", "view-seed"):
        (tmp_path / view / "bin").mkdir(parents=True)
        (tmp_path / view / "bin" / "ior").write_text("#!/bin/sh\n")
        (tmp_path / view / "bin" / "ior").chmod(0o755)
    monkeypatch.setattr(rfm_paths, "BUILT_TOOLS", tmp_path)
    monkeypatch.delenv("PFSLAB_TOOL_PATH", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("PFSLAB_VIEW", raising=False)
    assert shutil.which("ior", path=rfm_paths.tool_search_path()) == str(tmp_path / "view" / "bin" / "ior")
    # The seed's view, as `PFSLAB_VIEW=/opt/pfslab/view-seed make bench` names the Spack one.
    monkeypatch.setenv("PFSLAB_VIEW", str(tmp_path / "no-spack" / "view-seed"))
    assert shutil.which("ior", path=rfm_paths.tool_search_path()) == str(tmp_path / "view-seed" / "bin" / "ior")


# --- the real build, from the mirror -------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    already = os.environ.get("PFSLAB_TEST_TOOLS_BUILT")
    if already:
        # A cold `make tools TOOLS_MIRROR=` that another job ran (CI builds them once, for
        # its labs too): its prefix is checked, in a copy, since the warm-run test below
        # takes the prefix's lock and a lab test copying the tools would then skip them.
        source = Path(already)
        if not (source / "view").is_dir():
            pytest.fail(f"PFSLAB_TEST_TOOLS_BUILT={already} holds no tools (no view/): run 'make tools' there first")
        prefix = tmp_path_factory.mktemp("tools")
        shutil.copytree(source, prefix, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".lock"))
        print(f"\nthe tools another job built cold from the mirror, copied from {source}")
        yield prefix, 0.0
        return
    mirror = _mirror()
    if mirror is None:
        pytest.skip(f"no mirror of the tools' repositories: neither PFSLAB_TEST_TOOLS_MIRROR nor "
                    f"{KIT.parent / 'shared' / 'mirror' / 'git'} is a folder")
    prefix = tmp_path_factory.mktemp("tools")
    start = time.monotonic()
    done = _run_tools("--mirror", mirror, "--prefix", prefix)
    seconds = time.monotonic() - start
    print(f"\ncold make tools from {mirror}: {seconds:.1f} s\n{done.stderr}")
    assert done.returncode == 0, done.stderr
    yield prefix, seconds


def test_build_installs_every_tool_and_view(built: tuple[Path, float]) -> None:
    prefix, _ = built
    for tool in REGISTRY.tools.values():
        assert tools.installed(tool, prefix), tool.name
        stamp = json.loads((prefix / tool.name / tools.STAMP).read_text())
        assert stamp["pins"]["commits"][tool.pin.repo.name] == tool.pin.commit
    assert os.path.realpath(prefix / "view" / "bin" / "ior") == str(prefix / "ior-4.0.0" / "bin" / "ior")
    # IO500 keeps its own IOR (the commit its release pins), out of the views.
    assert os.access(prefix / "io500-sc25" / "bin" / "ior", os.X_OK)
    assert os.path.realpath(prefix / "view" / "bin" / "io500") == str(prefix / "io500-sc25" / "bin" / "io500")
    assert os.path.realpath(prefix / "view-seed" / "bin" / "mdtest") == str(prefix / "ior-3.3.0" / "bin" / "mdtest")


def test_second_build_takes_seconds(built: tuple[Path, float]) -> None:
    prefix, _ = built
    start = time.monotonic()
    # No mirror, and GitHub unreachable here: a warm run fetches nothing.
    done = _run_tools("--prefix", prefix)
    seconds = time.monotonic() - start
    print(f"\nwarm make tools: {seconds:.1f} s")
    assert done.returncode == 0, done.stderr
    assert "ior-3.3.0, ior-4.0.0, io500-sc25 up to date" in done.stderr
    assert seconds < 10


def _mpirun(*argv: str | Path, cwd: Path) -> str:
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    done = subprocess.run(["mpirun", "--allow-run-as-root", "-np", "2", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("tool", ["ior-4.0.0", "ior-3.3.0"])
def test_built_ior_and_mdtest_run_and_parse(built: tuple[Path, float], tool: str, tmp_path: Path) -> None:
    prefix, _ = built
    version = REGISTRY.tools[tool].pin.tag
    out = _mpirun(prefix / tool / "bin" / "ior", "-a", "POSIX", "-w", "-r", "-t", "1m", "-b", "4m",
                  "-o", tmp_path / "ior.dat", cwd=tmp_path)
    result = ior_parser.parse(out)
    assert result.version == version
    assert result.operation("write").max > 0 and result.operation("read").max > 0
    assert result.details["block_size"] == 4 * 2**20
    out = _mpirun(prefix / tool / "bin" / "mdtest", "-n", "10", "-d", tmp_path / "md", cwd=tmp_path)
    result = mdtest_parser.parse(out)
    assert result.version == version
    assert result.operation("file_creation").max > 0


def test_built_io500_starts_a_dry_run(built: tuple[Path, float], tmp_path: Path) -> None:
    prefix, _ = built
    config = tmp_path / "tiny.ini"
    config.write_text(f"[global]\ndatadir = {tmp_path}/data\nresultdir = {tmp_path}/results\n")
    out = _mpirun(prefix / "view" / "bin" / "io500", config, "--dry-run", cwd=tmp_path)
    assert "IO500 version io500-sc25 (standard)" in out
    assert "[SCORE ]" in out
