"""The Spack toolchain: spack/spack.yaml, spack/release.conf and the kit's package repo.

Most tests need no Spack: the environment parses, every root is pinned, the pins match
the seeds where Spack has the version (and the file says what stands in where not), the
views are where ReFrame looks, the io500 recipe is valid Python with the expected
directives. The tests at the end run a real Spack; they are skipped, with the reason,
unless SPACK_ROOT names a Spack checkout whose Python imports clingo (set SPACK_PYTHON
to a venv with the PyPI `clingo`) and PFSLAB_SPACK_PACKAGES names a spack-packages
checkout at the pinned commit (Spack's builtin recipes; no network is used).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import labs, rfm_paths
from pfslab.spackstep import profile as spack_profile
from pfslab.spackstep import step
from pfslab.spackstep import toolchain as toolchain_step

KIT = Path(__file__).resolve().parents[2]
SPACK_DIR = KIT / "spack"
SPACK_YAML = SPACK_DIR / "spack.yaml"
RELEASE_CONF = SPACK_DIR / "release.conf"
KIT_REPO = SPACK_DIR / "repo" / "spack_repo" / "pfslab"
IO500_RECIPE = KIT_REPO / "packages" / "io500" / "package.py"
PREFIX = "/opt/pfslab"

#: The seeds' tool versions, as the papers state them (tests/fixtures and shared/seeds).
SEEDS: dict[str, list[str]] = {
    "ior": ["3.3.0"],  # PixStor, BeeGFS
    "mdtest": ["3.3.0"],  # PixStor, BeeGFS (ships in the ior package)
    "iozone": ["3.487"],  # PixStor, BeeGFS
    "fio": ["3.7"],  # PixStor
    "openmpi": ["4.0.1", "1.10.7"],  # PixStor, BeeGFS
}

#: Versions Spack's builtin recipes offer at the pinned spack-packages release
#: (v2025.11.0); checked against a checkout when PFSLAB_SPACK_PACKAGES names one.
SPACK_VERSIONS: dict[str, list[str]] = {
    "ior": ["4.0.0", "3.3.0", "3.3.0rc1", "3.2.1", "3.2.0", "3.0.1"],
    "iozone": ["3_506", "3_491", "3_465"],
    "fio": ["3.37", "3.36", "3.34", "3.33", "3.26", "3.25", "3.19", "3.16", "2.19"],
}
#: Spack's fio recipe: conflicts("@:3.18", when="%gcc@10:") (-fno-common).
FIO_OLDEST_WITH_GCC10 = "3.19"

#: What IO500's prepare.sh pins per release tag (IOR_HASH, PFIND_HASH).
IO500_PREPARE = {
    "isc26_v1": {"tag": "io500-isc26_v1", "ior": "5fcf0ba995f", "pfind": "aaba722a178"},
    "sc25_v1": {"tag": "io500-sc25_v1", "ior": "8ab8f69b32b919", "pfind": "aaba722a178"},
}

SEED_LINE = re.compile(r"^# seed: (\S+) (\S+) \(([^)]+)\) -> (\S+) \| (.+)$")
SHA1 = re.compile(r"^[0-9a-f]{40}$")


def vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.split(r"[._]", version))


@pytest.fixture(scope="module")
def env() -> dict[str, Any]:
    data = yaml.safe_load(SPACK_YAML.read_text())
    assert isinstance(data, dict) and set(data) == {"spack"}
    return data["spack"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def roots(env: dict[str, Any]) -> list[str]:
    """The root specs, with $definitions expanded."""
    defs: dict[str, list[str]] = {}
    for entry in env["definitions"]:
        ((name, specs),) = entry.items()
        defs[name] = specs
    out: list[str] = []
    for spec in env["specs"]:
        out.extend(defs[spec[1:]] if spec.startswith("$") else [spec])
    return out


def root_version(spec: str) -> tuple[str, str]:
    """'ior@=4.0.0 ^openmpi@=5.0.8' -> ('ior', '4.0.0')."""
    match = re.match(r"^([a-z0-9-]+)@=(\S+?)(?=\s|\+|~|$)", spec)
    assert match, f"root spec {spec!r} is not pinned to an exact version (name@=version)"
    return match.group(1), match.group(2)


def pins(roots: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in roots:
        name, version = root_version(spec)
        out.setdefault(name, []).append(version)
    return out


def release() -> dict[str, str]:
    out = {}
    for line in RELEASE_CONF.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def seed_lines() -> dict[tuple[str, str], tuple[str, str, str]]:
    found = {}
    for line in SPACK_YAML.read_text().splitlines():
        match = SEED_LINE.match(line)
        if match:
            tool, seed, source, pin, why = match.groups()
            found[(tool, seed)] = (source, pin, why)
    return found


# --- the environment file -------------------------------------------------------------


def test_every_root_is_pinned_to_an_exact_version(roots: list[str]) -> None:
    assert len(roots) >= 10
    for spec in roots:
        root_version(spec)
        for dep in re.findall(r"\^(\S+)", spec):
            assert "@=" in dep, f"{spec!r}: the dependency {dep!r} is not pinned"


def test_the_issue_tools_are_all_there(roots: list[str]) -> None:
    pinned = pins(roots)
    assert sorted(pinned["ior"]) == ["3.3.0", "4.0.0"]
    assert [v for v in pinned["openmpi"] if v.startswith("4.1.")] and [v for v in pinned["openmpi"] if v.startswith("5.0.")]
    for tool in ("iozone", "fio", "hdf5", "lammps", "seacas", "io500"):
        assert tool in pinned, tool
    assert any(s.startswith("hdf5@") and "+mpi" in s for s in roots)
    assert any(s.startswith("seacas@") and "+applications" in s for s in roots), "io_shell needs seacas +applications"


def test_every_mpi_consumer_names_its_open_mpi(roots: list[str]) -> None:
    """With two Open MPIs in one environment, nothing may pick one by chance."""
    for spec in roots:
        name, version = root_version(spec)
        if name in {"ior", "hdf5", "lammps", "seacas", "io500"}:
            assert re.search(r"\^openmpi@=\S+", spec), spec
    assert "^openmpi@=4.1." in next(s for s in roots if s.startswith("ior@=3.3.0"))
    assert "^openmpi@=5.0." in next(s for s in roots if s.startswith("ior@=4.0.0"))


def test_every_seed_has_a_line_saying_what_stands_in(roots: list[str]) -> None:
    lines = seed_lines()
    pinned = pins(roots)
    for tool, versions in SEEDS.items():
        for seed in versions:
            assert (tool, seed) in lines, f"spack.yaml has no '# seed: {tool} {seed} ...' line"
            _, pin, why = lines[(tool, seed)]
            name, version = root_version(pin)
            assert version in pinned[name], f"the seed line for {tool} names {pin}, which is not a root"
            if version == seed:
                continue
            assert len(why) > 40, f"{tool} {seed}: the stand-in {pin} needs a reason"
            if seed in SPACK_VERSIONS.get(tool, []):
                assert "Spack still lists" in why, f"Spack has {tool} {seed}: say why it is not pinned"


def test_pins_match_the_seeds_where_spack_has_the_version(roots: list[str]) -> None:
    pinned = pins(roots)
    assert "3.3.0" in pinned["ior"]  # the ior package also installs mdtest 3.3.0
    for tool, versions in SPACK_VERSIONS.items():
        for seed in SEEDS.get(tool, []):
            if seed in versions:
                assert seed in pinned[tool], f"Spack has {tool} {seed}: pin it"


def test_iozone_stand_in_is_the_closest_spack_version(roots: list[str]) -> None:
    (seed,) = SEEDS["iozone"]
    closest = min(SPACK_VERSIONS["iozone"], key=lambda v: abs(int(v.split("_")[1]) - int(seed.split(".")[1])))
    assert pins(roots)["iozone"] == [closest] == ["3_491"]


def test_fio_stand_in_is_the_closest_that_builds_with_current_gcc(roots: list[str]) -> None:
    buildable = [v for v in SPACK_VERSIONS["fio"] if vkey(v) >= vkey(FIO_OLDEST_WITH_GCC10)]
    closest = min(buildable, key=vkey)
    assert closest in pins(roots)["fio"]
    assert max(SPACK_VERSIONS["fio"], key=vkey) in pins(roots)["fio"], "the current view has the newest fio"


def test_builtin_versions_match_a_spack_packages_checkout() -> None:
    checkout = os.environ.get("PFSLAB_SPACK_PACKAGES")
    if not checkout:
        pytest.skip("PFSLAB_SPACK_PACKAGES is not set (a spack-packages checkout at the pinned commit)")
    packages = Path(checkout) / "repos" / "spack_repo" / "builtin" / "packages"
    for tool, versions in SPACK_VERSIONS.items():
        text = (packages / tool / "package.py").read_text()
        listed = re.findall(r'version\(\s*"([^"]+)",\s*sha256', text)
        assert listed == versions, tool
    fio = (packages / "fio" / "package.py").read_text()
    assert 'conflicts("@:3.18", when="%gcc@10:"' in fio


# --- views, store, concretizer ---------------------------------------------------------


def view_holds(view: dict[str, Any], spec: str) -> bool:
    """Whether a root lands in a view (select/exclude by name@=version, as Spack matches)."""
    name, version = root_version(spec)
    this = f"{name}@={version}"
    if view.get("select") and this not in view["select"]:
        return False
    return this not in view.get("exclude", [])


def test_views_are_where_reframe_looks(env: dict[str, Any]) -> None:
    views = env["view"]
    assert set(views) == {"default", "seed"}
    assert views["default"]["root"] == rfm_paths.DEFAULT_VIEW == f"{PREFIX}/view"
    assert views["seed"]["root"] == f"{PREFIX}/view-seed"
    # What `make toolchain` swaps (pfslab/spackstep/toolchain.py), under its default prefix.
    assert [str(step.DEFAULT_PREFIX / view) for view in toolchain_step.VIEWS] == [views["default"]["root"], views["seed"]["root"]]
    assert env["config"]["install_tree"]["root"] == f"{PREFIX}/store"


def test_each_view_holds_one_ior_and_one_open_mpi(env: dict[str, Any], roots: list[str]) -> None:
    held = {name: [s for s in roots if view_holds(view, s)] for name, view in env["view"].items()}
    for name, specs in held.items():
        assert env["view"][name]["link"] == "roots"
        versions = pins(specs)
        assert len(versions["ior"]) == 1 and len(versions["openmpi"]) == 1 and len(versions["fio"]) == 1, name
    assert pins(held["default"])["ior"] == ["4.0.0"] and pins(held["default"])["openmpi"][0].startswith("5.0.")
    assert pins(held["seed"])["ior"] == ["3.3.0"] and pins(held["seed"])["openmpi"][0].startswith("4.1.")
    for spec in roots:
        assert any(view_holds(v, spec) for v in env["view"].values()), f"{spec} is in no view"
    for entry in env["view"]["seed"]["select"] + env["view"]["default"]["exclude"]:
        assert any(entry == "{}@={}".format(*root_version(s)) for s in roots), f"{entry} matches no root"


def test_concretizer_and_target_are_pinned(env: dict[str, Any]) -> None:
    conc = env["concretizer"]
    assert conc["unify"] == "when_possible"  # two IORs, two Open MPIs, one lock
    assert conc["reuse"] is False
    assert conc["targets"] == {"granularity": "generic", "host_compatible": False}
    portable = "target=x86_64_v2"
    assert env["packages"]["all"]["require"] == [portable]
    # Spack drops `all`'s requirements for a package with requirements of its own:
    # each of them must repeat the target.
    for name, settings in env["packages"].items():
        if "require" in settings and name != "mpi":
            assert portable in settings["require"], f"spack.yaml: packages:{name} requires no portable target"


def test_the_kit_repository_is_in_the_environment(env: dict[str, Any]) -> None:
    assert env["repos"] == {"pfslab": "./repo/spack_repo/pfslab"}
    assert (SPACK_DIR / env["repos"]["pfslab"] / "repo.yaml").resolve() == KIT_REPO / "repo.yaml"
    repo = yaml.safe_load((KIT_REPO / "repo.yaml").read_text())["repo"]
    # Package API v2: the namespace is the directory under spack_repo/.
    assert repo["namespace"] == KIT_REPO.name == "pfslab"
    assert re.fullmatch(r"v2\.\d+", repo["api"])
    for package in (KIT_REPO / "packages").iterdir():
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", package.name), f"{package.name}: not a valid module name"
        assert (package / "package.py").is_file()


# --- the one pin of Spack --------------------------------------------------------------


def test_release_pins_are_complete_and_consistent() -> None:
    pins_ = release()
    assert set(pins_) == {
        "SPACK_RELEASE",
        "SPACK_RELEASE_COMMIT",
        "SPACK_GIT_URL",
        "SPACK_MIN_VERSION",
        "SPACK_PACKAGES_RELEASE",
        "SPACK_PACKAGES_COMMIT",
        "SPACK_PACKAGES_GIT_URL",
    }
    assert re.fullmatch(r"v\d+\.\d+\.\d+", pins_["SPACK_RELEASE"])
    assert SHA1.match(pins_["SPACK_RELEASE_COMMIT"]) and SHA1.match(pins_["SPACK_PACKAGES_COMMIT"])
    assert vkey(pins_["SPACK_MIN_VERSION"]) <= vkey(pins_["SPACK_RELEASE"][1:])
    assert vkey(pins_["SPACK_MIN_VERSION"]) >= (1, 0, 0), "Package API v2 repositories need Spack 1.x"


def test_no_script_repeats_the_pins() -> None:
    """release.conf is the one place: the scripts read it, never restate a version."""
    pins_ = release()
    scripts = ["scripts/toolchain", "scripts/mirror", *(str(p.relative_to(KIT)) for p in (KIT / "pfslab" / "spackstep").glob("*.py"))]
    for script in scripts:
        text = (KIT / script).read_text()
        for key in ("SPACK_RELEASE", "SPACK_MIN_VERSION", "SPACK_PACKAGES_COMMIT", "SPACK_RELEASE_COMMIT"):
            assert pins_[key].lstrip("v") not in text, f"{script} restates {key}"
    paths = step.Paths(root=KIT, prefix=Path("/nonexistent"), env=SPACK_DIR)
    assert paths.release_file == SPACK_DIR / "release.conf"
    assert {key: step.release_pin(paths, key) for key in pins_} == pins_


# --- the io500 recipe ------------------------------------------------------------------


def directives(path: Path) -> tuple[ast.ClassDef, dict[str, list[dict[str, Any]]]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    found: dict[str, list[dict[str, Any]]] = {}
    for stmt in cls.body:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        call = stmt.value
        if isinstance(call.func, ast.Name):
            args: dict[str, Any] = {"_args": [ast.literal_eval(a) for a in call.args]}
            args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
            found.setdefault(call.func.id, []).append(args)
    return cls, found


def test_io500_recipe_is_a_valid_package_with_the_expected_directives() -> None:
    cls, found = directives(IO500_RECIPE)
    assert cls.name == "Io500"
    assert [b.id for b in cls.bases if isinstance(b, ast.Name)] == ["MakefilePackage"]
    source = IO500_RECIPE.read_text()
    assert "from spack_repo.builtin.build_systems.makefile import MakefilePackage" in source
    assert "from spack.package import *" in source
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert {"edit", "build", "install"} <= methods
    assert set(found) >= {"version", "resource", "depends_on", "license"}
    deps = [d["_args"][0] for d in found["depends_on"]]
    assert "mpi" in deps and "c" in deps
    assert {"autoconf", "automake", "libtool", "m4"} <= set(deps)


def test_io500_versions_pin_the_commits_of_prepare_sh() -> None:
    _, found = directives(IO500_RECIPE)
    versions = {v["_args"][0]: v for v in found["version"]}
    assert set(versions) == set(IO500_PREPARE)
    assert [name for name, v in versions.items() if v.get("preferred")] == ["isc26_v1"]
    resources = found["resource"]
    for name, version in versions.items():
        assert version["tag"] == IO500_PREPARE[name]["tag"]
        assert SHA1.match(version["commit"])
        for tool in ("ior", "pfind"):
            mine = [r for r in resources if r["name"] == tool and r.get("when") in (None, f"@{name}")]
            assert len(mine) == 1, f"io500@{name}: exactly one {tool} resource"
            (res,) = mine
            assert SHA1.match(res["commit"]) and res["commit"].startswith(IO500_PREPARE[name][tool])
            assert res["destination"] == "build" and res["placement"] == tool
            assert res["git"].startswith("https://github.com/")


def test_the_environment_pins_an_io500_release_the_recipe_has(roots: list[str]) -> None:
    (version,) = pins(roots)["io500"]
    assert version in IO500_PREPARE


# --- the committed spack.lock ---------------------------------------------------------

SPACK_LOCK = SPACK_DIR / "spack.lock"


def normalized(spec: str) -> str:
    return re.sub(r"\s+(?=[+~])", "", spec.strip())


def lock_roots(lock: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["spec"]: lock["concrete_specs"][r["hash"]] for r in lock["roots"]}


def test_the_committed_lock_is_the_concretization_of_spack_yaml(roots: list[str]) -> None:
    """Editing spack.yaml without `make toolchain` (which rewrites spack.lock) fails here."""
    if not SPACK_LOCK.is_file():
        pytest.skip("spack/spack.lock is not there yet (make toolchain writes it)")
    lock = json.loads(SPACK_LOCK.read_text())
    assert lock["_meta"]["file-type"] == "spack-lockfile"
    by_root = lock_roots(lock)
    assert set(by_root) == {normalized(s) for s in roots}
    nodes = lock["concrete_specs"]
    for spec, node in by_root.items():
        name, version = root_version(spec)
        assert (node["name"], node["version"]) == (name, version)
        mpi = [nodes[d["hash"]]["version"] for d in node.get("dependencies", []) if nodes[d["hash"]]["name"] == "openmpi"]
        wanted = re.findall(r"\^openmpi@=(\S+)", spec)
        assert mpi == wanted, spec
    for node in nodes.values():
        if not node.get("external"):
            assert node["arch"]["target"] == "x86_64_v2", node["name"]
    assert next(n for n in by_root.values() if n["name"] == "io500")["namespace"] == "pfslab"


# --- with a real Spack -----------------------------------------------------------------


def spack_or_skip() -> tuple[Path, Path]:
    root = os.environ.get("SPACK_ROOT")
    if not root or not (Path(root) / "bin" / "spack").is_file():
        pytest.skip("SPACK_ROOT does not name a Spack checkout")
    python = os.environ.get("SPACK_PYTHON") or shutil.which("python3") or "python3"
    if subprocess.run([python, "-c", "import clingo"], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"Spack's Python ({python}) cannot import clingo: pip install clingo, then set SPACK_PYTHON")
    packages = os.environ.get("PFSLAB_SPACK_PACKAGES")
    if not packages or not (Path(packages) / "repos" / "spack_repo" / "builtin" / "repo.yaml").is_file():
        pytest.skip("PFSLAB_SPACK_PACKAGES does not name a spack-packages checkout (Spack's builtin recipes)")
    return Path(root), Path(packages) / "repos" / "spack_repo" / "builtin"


def spack_environ(tmp: Path, builtin: Path) -> dict[str, str]:
    config = tmp / "config"
    config.mkdir(exist_ok=True)
    (config / "repos.yaml").write_text(f"repos:\n  builtin: {builtin}\n")
    return {**os.environ, "SPACK_USER_CONFIG_PATH": str(config), "SPACK_USER_CACHE_PATH": str(tmp / "cache")}


def test_the_environment_concretizes_offline(concretized: Concretized) -> None:
    lock, seconds = concretized(DEFAULT_PROFILE)
    print(f"concretize took {seconds:.0f} s")
    nodes = lock["concrete_specs"]
    by_root = {r["spec"]: nodes[r["hash"]] for r in lock["roots"]}
    env = yaml.safe_load(SPACK_YAML.read_text())["spack"]
    defs = {k: v for d in env["definitions"] for k, v in d.items()}
    assert len(by_root) == len(defs["current"]) + len(defs["seed"])
    for node in by_root.values():
        assert node["arch"]["target"] == "x86_64_v2"

    def mpi_of(node: dict[str, Any]) -> str:
        deps = [nodes[d["hash"]] for d in node.get("dependencies", [])]
        return next(f"{d['name']}@{d['version']}" for d in deps if d["name"] == "openmpi")

    ior = {n["version"]: n for n in by_root.values() if n["name"] == "ior"}
    assert set(ior) == {"3.3.0", "4.0.0"}
    assert mpi_of(ior["3.3.0"]).startswith("openmpi@4.1.") and mpi_of(ior["4.0.0"]).startswith("openmpi@5.0.")
    io500 = next(n for n in by_root.values() if n["name"] == "io500")
    assert io500["namespace"] == "pfslab" and io500["version"] == "isc26_v1"
    if SPACK_LOCK.is_file():
        committed = json.loads(SPACK_LOCK.read_text())
        same = set(lock["concrete_specs"]) == set(committed["concrete_specs"])
        print(f"same DAG hashes as the committed spack.lock: {same}")
        if host_matches(committed):
            assert same, "this host has the committed lock's OS and compiler: the concretization must match it"


# ---- per lab: the toolchain its clients get ----------------------------------------------
#
# A lab's clients get spack.yaml plus their toolchain profile (pfslab/spackstep/profile.py,
# write_profile_scope): the target of their machine and, on BeeGFS, IOR +beegfs against
# the system's headers. Each profile is concretized once, with the kit's own function
# writing its scope, and every lab is checked against its own: Open MPI's fabric support
# against the lab's network.fabric (registry/fabrics.json), fio +libaio, IOR's BeeGFS
# support where the lab is BeeGFS, the target of the clients' arch, and the two builds
# that start remote daemons from their own prefix (no --prefix needed).

#: (client arch, "beegfs" or "") -> the profile's key; the committed lock is the default's.
Profile = tuple[str, str]
DEFAULT_PROFILE: Profile = ("x86_64", "")
#: The Spack target each client arch gets (spack.yaml's for x86_64, the profile's otherwise).
TARGETS = {"x86_64": "x86_64_v2", "aarch64": "aarch64"}
#: What Spack finds on an aarch64 Debian 12 client (its gcc and glibc): this x86_64 host
#: has no aarch64 compiler, so the test declares the one the node would detect.
AARCH64_NODE = """packages:
  gcc:
    externals:
    - spec: gcc@12.2.0 languages:='c,c++,fortran' os=debian12 target=aarch64
      prefix: /usr
      extra_attributes:
        compilers: {c: /usr/bin/gcc, cxx: /usr/bin/g++, fortran: /usr/bin/gfortran}
  glibc:
    externals:
    - spec: glibc@2.36 os=debian12 target=aarch64
      prefix: /usr
"""


def client_arch(lab: dict[str, Any]) -> str:
    arches = {(n.get("hardware", {}).get("cpu") or {}).get("arch", "x86_64") for n in labs.client_nodes(lab)}
    assert len(arches) == 1, f"lab {lab['name']}: clients of several machines {sorted(arches)}: one toolchain profile each"
    return arches.pop()


def lab_profile(lab: dict[str, Any]) -> Profile:
    fs = lab["filesystem"]["type"]
    return client_arch(lab), fs if fs == "beegfs" else ""


def toolchain_labs() -> list[str]:
    """Every lab that has a fabric and clients."""
    out = []
    for name in labs.lab_names():
        lab = labs.load(name)
        if lab["network"].get("fabric") and labs.client_nodes(lab):
            out.append(name)
    return out


def write_profile(scope: Path, profile: Profile) -> bool:
    """The profile's scope, written by the kit's own code (pfslab/spackstep/profile.py);
    False: none. The BeeGFS headers' version stands for the one the node has installed."""
    arch, fs = profile
    return spack_profile.write_profile_scope(KIT, SPACK_YAML, scope, arch, fs, ["7.4.5"])


Concretized = Any  # the fixture below: profile -> (spack.lock, seconds)


@pytest.fixture(scope="module")
def concretized(tmp_path_factory: pytest.TempPathFactory) -> Concretized:
    """Concretize each profile once (offline, with the pinned recipes), on demand."""
    cache: dict[Profile, tuple[dict[str, Any], float]] = {}

    def get(profile: Profile) -> tuple[dict[str, Any], float]:
        if profile in cache:
            return cache[profile]
        root, builtin = spack_or_skip()
        tmp = tmp_path_factory.mktemp("profile-" + "-".join(p for p in profile if p))
        envdir = tmp / "env"
        envdir.mkdir()
        manifest = SPACK_YAML.read_text()
        arch, _ = profile
        extra: list[str] = []
        if arch != "x86_64":
            # Spack offers only targets of the host's family: on this x86_64 host,
            # naming aarch64 on the roots makes it a candidate, as the host does on an
            # aarch64 node; the profile's requirements still decide every node.
            data = yaml.safe_load(manifest)
            for entry in data["spack"]["definitions"]:
                ((name, specs),) = entry.items()
                entry[name] = [f"{spec} target={TARGETS[arch]}" for spec in specs]
            manifest = yaml.safe_dump(data, sort_keys=False)
            node = tmp / "aarch64-node"
            node.mkdir()
            (node / "packages.yaml").write_text(AARCH64_NODE)
            extra = ["-C", str(node)]
        (envdir / "spack.yaml").write_text(manifest)
        shutil.copytree(SPACK_DIR / "repo", envdir / "repo")
        scope = tmp / "spack-profile"
        if write_profile(scope, profile):
            extra = ["-C", str(scope), *extra]
        command = [
            str(root / "bin" / "spack"), *extra,
            "-c", "view:false",
            "-c", f"config:install_tree:root:{tmp / 'store'}",
            "-e", str(envdir),
            "concretize",
        ]  # fmt: skip
        start = time.monotonic()
        out = subprocess.run(command, env=spack_environ(tmp, builtin), capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        assert out.returncode == 0, f"profile {profile}: " + out.stderr[-3000:]
        cache[profile] = (json.loads((envdir / "spack.lock").read_text()), seconds)
        print(f"\nprofile {profile[0]}{' ' + profile[1] if profile[1] else ''}: concretized in {seconds:.0f} s, "
              f"{len(cache[profile][0]['concrete_specs'])} specs")
        return cache[profile]

    return get


def satisfies(node: dict[str, Any], constraint: str) -> bool:
    """A node's parameters against +v, ~v or v=a,b (every value present)."""
    params = node.get("parameters", {})
    if constraint[0] in "+~":
        return params.get(constraint[1:]) is (constraint[0] == "+")
    key, _, values = constraint.partition("=")
    have = params.get(key)
    have = set(have) if isinstance(have, list) else {have}
    return set(values.split(",")) <= have


def deps_of(nodes: dict[str, Any], node: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [nodes[d["hash"]] for d in node.get("dependencies", []) if nodes[d["hash"]]["name"] == name]


def check_lab(lab: dict[str, Any], lock: dict[str, Any]) -> list[str]:
    """What the lab's clients would get wrong with this lock (empty: nothing), and a summary."""
    nodes = lock["concrete_specs"]
    fab = lab["network"]["fabric"]
    needs = json.loads((KIT / "registry" / "fabrics.json").read_text())["fabrics"][fab]["spack"]
    problems = []
    mpis = [n for n in nodes.values() if n["name"] == "openmpi"]
    assert len(mpis) == 2
    for mpi in mpis:
        where = f"openmpi@{mpi['version']}"
        for constraint in needs.get("openmpi", []):
            if not satisfies(mpi, constraint):
                problems.append(f"{where} is not {constraint} ({fab})")
        for dep in ("ucx", "libfabric"):
            for constraint in needs.get(dep, []):
                found = deps_of(nodes, mpi, dep)
                if not found or not all(satisfies(d, constraint) for d in found):
                    problems.append(f"{where}: its {dep} is not {constraint} ({fab})")
        if mpi["version"].startswith("4.") and not satisfies(mpi, "+orterunprefix"):
            problems.append(f"{where} would need --prefix to start its remote daemons (not +orterunprefix)")
        for prrte in deps_of(nodes, mpi, "prrte"):
            if not satisfies(prrte, "+prefix_by_default"):
                problems.append(f"{where}'s prrte would need --prefix to start its daemons (not +prefix_by_default)")
    for fio in (n for n in nodes.values() if n["name"] == "fio"):
        if not satisfies(fio, "+libaio"):
            problems.append(f"fio@{fio['version']} has no libaio engine")
    beegfs = lab["filesystem"]["type"] == "beegfs"
    for ior in (n for n in nodes.values() if n["name"] == "ior"):
        if satisfies(ior, "+beegfs") is not beegfs:
            problems.append(f"ior@{ior['version']} is {'~' if beegfs else '+'}beegfs on a {lab['filesystem']['type']} lab")
        headers = deps_of(nodes, ior, "beegfs-client-dev")
        if beegfs and not (headers and headers[0].get("external", {}).get("path") == "/usr"):
            problems.append(f"ior@{ior['version']} +beegfs does not use the system's BeeGFS headers (/usr)")
    target = TARGETS[client_arch(lab)]
    wrong = sorted({f"{n['name']} target={n['arch']['target']}" for n in nodes.values()
                    if not n.get("external") and n["arch"]["target"] != target})
    if wrong:
        problems.append(f"clients are {client_arch(lab)} ({target}) but {', '.join(wrong[:5])}")
    return problems


@pytest.mark.parametrize("name", toolchain_labs())
def test_each_labs_toolchain_fits_its_fabric_file_system_and_clients(name: str, concretized: Concretized) -> None:
    lab = labs.load(name)
    lock, _ = concretized(lab_profile(lab))
    problems = check_lab(lab, lock)
    nodes = lock["concrete_specs"].values()
    mpis = ", ".join(f"openmpi@{n['version']} fabrics={','.join(n['parameters']['fabrics'])}"
                     for n in sorted((n for n in nodes if n["name"] == "openmpi"), key=lambda n: n["version"]))
    iors = ", ".join(f"ior@{n['version']}{'+' if n['parameters'].get('beegfs') else '~'}beegfs"
                     for n in sorted((n for n in nodes if n["name"] == "ior"), key=lambda n: n["version"]))
    fios = ", ".join(f"fio@{n['version']}{'+' if n['parameters'].get('libaio') else '~'}libaio"
                     for n in nodes if n["name"] == "fio")
    targets = ",".join(sorted({n["arch"]["target"] for n in nodes if not n.get("external")}))
    print(f"\n{name}: fabric {lab['network']['fabric']}, {lab['filesystem']['type']}, {client_arch(lab)} clients -> "
          f"{mpis}; {iors}; {fios}; target {targets}: {'ok' if not problems else 'WRONG'}")
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", [n for n in toolchain_labs() if lab_profile(labs.load(n)) == DEFAULT_PROFILE])
def test_the_committed_lock_fits_every_lab_of_the_default_profile(name: str) -> None:
    """No Spack needed: the committed spack.lock is what these labs' clients install."""
    if not SPACK_LOCK.is_file():
        pytest.skip("spack/spack.lock is not there yet (make toolchain writes it)")
    problems = check_lab(labs.load(name), json.loads(SPACK_LOCK.read_text()))
    assert not problems, f"{name}: " + "; ".join(problems)


def test_spack_yaml_builds_every_transport_the_labs_fabrics_need(env: dict[str, Any]) -> None:
    """The fabric -> build mapping is registry/fabrics.json's; spack.yaml must cover every lab."""
    fabrics = json.loads((KIT / "registry" / "fabrics.json").read_text())["fabrics"]
    required = {pkg: " ".join(str(r) for r in env["packages"].get(pkg, {}).get("require", []) if isinstance(r, str))
                for pkg in ("openmpi", "ucx", "libfabric")}
    for name in toolchain_labs():
        fab = labs.load(name)["network"]["fabric"]
        for pkg, constraints in fabrics[fab]["spack"].items():
            for constraint in constraints:
                if "=" in constraint:
                    key, _, values = constraint.partition("=")
                    built = re.search(rf"\b{key}=(\S+)", required[pkg])
                    assert built and set(values.split(",")) <= set(built.group(1).split(",")), f"{name}: {pkg} {constraint}"
                else:
                    assert constraint in required[pkg].split(), f"{name} ({fab}): spack.yaml's {pkg} is not {constraint}"


def test_the_lab_checks_can_fail(concretized: Concretized) -> None:
    """check_lab against a lock made for another lab: each rule speaks."""
    lock, _ = concretized(DEFAULT_PROFILE)
    beegfs = labs.load("beegfs-medium")
    assert any("~beegfs on a beegfs lab" in p for p in check_lab(beegfs, lock))
    stria = labs.load("cephfs-stria")
    assert any(p.startswith("clients are aarch64 (aarch64) but ") for p in check_lab(stria, lock))
    broken = json.loads(json.dumps(lock))
    for node in broken["concrete_specs"].values():
        if node["name"] == "openmpi":
            node["parameters"]["fabrics"] = ["ofi"]
        if node["name"] == "fio":
            node["parameters"]["libaio"] = False
    problems = check_lab(labs.load("azure-beegfs-medium"), broken)
    assert any("is not fabrics=ucx (infiniband)" in p for p in problems)
    assert any("has no libaio engine" in p for p in problems)


def host_matches(lock: dict[str, Any]) -> bool:
    """Whether this host has the OS and gcc the lock was concretized with."""
    nodes = lock["concrete_specs"].values()
    gcc = next((n["version"] for n in nodes if n["name"] == "gcc" and n.get("external")), None)
    lock_os = next(n["arch"]["platform_os"] for n in nodes if "arch" in n)
    release = dict(
        line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line
    )
    host_os = release.get("ID", "").strip('"') + release.get("VERSION_ID", "").strip('"').split(".")[0]
    try:
        host_gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return False
    return lock_os == host_os and gcc == host_gcc


def kit_environment(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A copy of the kit's Spack environment (manifest and repo): the spack command in
    it and the environment variables that point Spack at the builtin recipes."""
    root, builtin = spack_or_skip()
    envdir = tmp_path / "env"
    envdir.mkdir()
    shutil.copy(SPACK_YAML, envdir)
    shutil.copytree(SPACK_DIR / "repo", envdir / "repo")
    return [str(root / "bin" / "spack"), "-e", str(envdir)], spack_environ(tmp_path, builtin)


def test_io500_passes_spack_audit(tmp_path: Path) -> None:
    """Spack's own checks of the recipe's directives and attributes."""
    spack, environ = kit_environment(tmp_path)
    audit = subprocess.run([*spack, "audit", "packages", "io500"], env=environ, capture_output=True, text=True, check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "PKG-DIRECTIVES: passed" in audit.stdout
    info = subprocess.run([*spack, "info", "io500"], env=environ, capture_output=True, text=True, check=False)
    assert "isc26_v1    [git] https://github.com/IO500/io500.git at commit 0befb546" in info.stdout


def test_the_kits_recipes_over_builtin_ones_pass_spack_audit_and_add_their_variants(tmp_path: Path) -> None:
    """ior (+beegfs), prrte (+prefix_by_default) and the external-only beegfs-client-dev."""
    spack, environ = kit_environment(tmp_path)
    names = sorted(p.name.replace("_", "-") for p in (KIT_REPO / "packages").iterdir())
    assert names == ["beegfs-client-dev", "io500", "ior", "prrte"]
    audit = subprocess.run([*spack, "audit", "packages", *names], env=environ, capture_output=True, text=True, check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    for name, variant in (("ior", "beegfs"), ("prrte", "prefix_by_default")):
        info = subprocess.run([*spack, "info", f"pfslab.{name}"], env=environ, capture_output=True, text=True, check=False)
        assert info.returncode == 0 and re.search(rf"^\s+{variant} \[false\]", info.stdout, re.M), info.stdout[-2000:]


HELLO_RECIPE = '''
from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class PfslabHello(Package):
    """A one-file package for the toolchain test: its source is a local tarball."""

    homepage = "https://example.invalid"
    url = "file://{tarball}"

    version("1.0", sha256="{sha}")
    version("2.0", sha256="{missing}", url="file://{tarball}.missing")

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install("hello", prefix.bin)
'''


def test_toolchain_with_real_spack_installs_is_a_noop_again_and_survives_a_failed_install(tmp_path: Path) -> None:
    """scripts/toolchain end to end on a one-package environment (no network)."""
    root, builtin = spack_or_skip()
    src = tmp_path / "hello-1.0"
    src.mkdir()
    (src / "hello").write_text("#!/bin/sh\necho hello 1.0\n")
    (src / "hello").chmod(0o755)
    tarball = tmp_path / "hello-1.0.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname="hello-1.0")
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    envdir, prefix = tmp_path / "env", tmp_path / "prefix"
    pkg = envdir / "repo" / "spack_repo" / "pfstest" / "packages" / "pfslab_hello"
    pkg.mkdir(parents=True)
    (pkg.parents[1] / "repo.yaml").write_text("repo:\n  namespace: pfstest\n  api: v2.2\n")
    (pkg / "package.py").write_text(HELLO_RECIPE.format(tarball=tarball, sha=sha, missing="0" * 64))
    manifest = {
        "spack": {
            "specs": ["pfslab-hello@=1.0"],
            "repos": {"pfstest": "./repo/spack_repo/pfstest"},
            "concretizer": {"unify": True, "reuse": False},
            "config": {"install_tree": {"root": str(prefix / "store")}},
            "view": {
                "default": {"root": str(prefix / "view"), "link": "roots"},
                "seed": {"root": str(prefix / "view-seed"), "link": "roots"},
            },
        }
    }
    (envdir / "spack.yaml").write_text(yaml.safe_dump(manifest))
    environ = {
        **os.environ,
        "SPACK_ROOT": str(root),
        "PFSLAB_PREFIX": str(prefix),
        "PFSLAB_SPACK_ENV": str(envdir),
        "PFSLAB_SPACK_PACKAGES": str(builtin.parents[2]),
    }
    environ.pop("MIRROR", None)

    def toolchain() -> subprocess.CompletedProcess[str]:
        start = time.monotonic()
        out = subprocess.run([str(KIT / "scripts" / "toolchain")], env=environ, capture_output=True, text=True, check=False)
        print(f"toolchain: exit {out.returncode} in {time.monotonic() - start:.0f} s")
        return out

    first = toolchain()
    assert first.returncode == 0, first.stderr[-3000:]
    assert subprocess.run([str(prefix / "view" / "bin" / "hello")], capture_output=True, text=True).stdout == "hello 1.0\n"
    view, lock = os.readlink(prefix / "view"), (envdir / "spack.lock").read_text()

    second = toolchain()
    assert second.returncode == 0 and "up to date: nothing changed" in second.stderr

    manifest["spack"]["specs"] = ["pfslab-hello@=2.0"]  # its source does not exist
    (envdir / "spack.yaml").write_text(yaml.safe_dump(manifest))
    third = toolchain()
    assert third.returncode == 2
    assert "error: spack install failed" in third.stderr.splitlines()[-1]
    assert os.readlink(prefix / "view") == view
    assert (prefix / "view" / "bin" / "hello").is_file()
    assert (envdir / "spack.lock").read_text() == lock
