"""Whether an Open MPI accepts a job's MPI options: mpirun's own options and MCA settings.

The data is spack/openmpi-components.json: per Open MPI version that spack/spack.lock
pins, the MCA frameworks and components of that version's source, component aliases,
registered parameter names and mpirun's options (derived from the source at the tag the
lock builds; the file names repo, tag and commit). A component that needs a fabric
library (btl/openib needs verbs, pml/ucx needs UCX, mtl/ofi needs libfabric) counts only
when the locked build has that fabric (Spack's ``fabrics`` variant in the lock).

What is checked, per option:
- an mpirun option (``-np``, ``--map-by``, ``--prefix``...): its name is one that
  version's mpirun knows, given with the dashes it accepts;
- ``--mca NAME VALUE`` / ``-mca`` / ``OMPI_MCA_NAME=VALUE``: a NAME that is a framework
  selects components: each of VALUE's (``^`` excludes, ``,`` separates) must be a built
  component of that framework; any other NAME must be a registered name (a synonym such
  as oob_tcp_if_include) or start with a framework (``<framework>_base_...``) and one of
  its built components (``btl_openib_allow_ib``: framework btl, component openib). An
  exclude list (``^ucx``) may name a component this build lacks, as Open MPI allows.
Parameter names below the component (``allow_ib``) are not checked.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT

DATA = KIT_ROOT / "spack" / "openmpi-components.json"
LOCK = KIT_ROOT / "spack" / "spack.lock"

#: Project-level parameter prefixes (no framework): mpi_leave_pinned, opal_..., prte_...
PROJECTS = ("mpi", "ompi", "opal", "orte", "prte", "pmix", "oshmem", "shmem")


@dataclass(frozen=True)
class OpenMPI:
    """One Open MPI build: its version's names and the fabrics it was built with."""

    version: str
    frameworks: dict[str, frozenset[str]]
    registered: frozenset[str]
    options: dict[str, int]
    dashes: str
    needs: dict[str, tuple[str, ...]]
    fabrics: frozenset[str] = field(default_factory=frozenset)

    def built(self, framework: str, component: str) -> bool:
        if component not in self.frameworks.get(framework, frozenset()):
            return False
        return all(lib in self.fabrics for lib in self.needs.get(f"{framework}/{component}", ()))

    def why_not(self, framework: str, component: str) -> str:
        if component not in self.frameworks.get(framework, frozenset()):
            known = ", ".join(sorted(self.frameworks.get(framework, ())))
            return f"Open MPI {self.version} has no {framework} component {component!r} (it has: {known})"
        missing = [lib for lib in self.needs.get(f"{framework}/{component}", ()) if lib not in self.fabrics]
        have = ",".join(sorted(self.fabrics)) or "none"
        return (f"{framework}/{component} needs fabrics={','.join(missing)}; the locked Open MPI {self.version} "
                f"is built with fabrics={have}")


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def versions() -> list[str]:
    """The Open MPI versions the data file describes."""
    return sorted(_data()["versions"])


def load(version: str, fabrics: frozenset[str] = frozenset()) -> OpenMPI:
    """Open MPI ``version`` built with ``fabrics`` (Spack's openmpi fabrics variant)."""
    entry = _data()["versions"].get(version)
    if entry is None:
        raise KeyError(f"spack/openmpi-components.json has no Open MPI {version} (it has: {', '.join(versions())})")
    frameworks = {f: frozenset(cs) for f, cs in entry["frameworks"].items()}
    for fw, aliases in entry.get("aliases", {}).items():
        frameworks[fw] = frameworks.get(fw, frozenset()) | frozenset(aliases)
    needs = {k: tuple(v) for k, v in entry["needs"].items()}
    # An alias (plm rsh -> ssh) needs what its component needs: none of the aliases do.
    return OpenMPI(version, frameworks, frozenset(entry["registered"]), dict(entry["mpirun_options"]),
                   entry["dashes"], needs, frozenset(fabrics))


def locked() -> list[OpenMPI]:
    """Every Open MPI in spack/spack.lock, with the fabrics it is built with."""
    lock = json.loads(LOCK.read_text())
    out = []
    for node in lock["concrete_specs"].values():
        if node["name"] == "openmpi":
            fabrics = frozenset(f for f in node.get("parameters", {}).get("fabrics", []) if f not in ("none", "auto"))
            out.append(load(node["version"], fabrics))
    return sorted(out, key=lambda m: m.version)


# ---- checking ------------------------------------------------------------------------

def check_mca(mpi: OpenMPI, name: str, value: str) -> str | None:
    """None when ``--mca name value`` is accepted, else why not (one line)."""
    frameworks = mpi.frameworks
    if name in frameworks:
        # An include list must name built components (Open MPI stops: "A requested
        # component was not found"); an exclude list (^) may name one this build lacks,
        # but it must exist in this version.
        exclude = value.startswith("^")
        problems = []
        for comp in value.lstrip("^").split(","):
            comp = comp.strip()
            if not comp or (mpi.built(name, comp) or (exclude and comp in frameworks[name])):
                continue
            problems.append(f"--mca {name} {value}: " + mpi.why_not(name, comp))
        return "; ".join(problems) or None
    if name in mpi.registered:
        return None
    for fw in sorted((f for f in frameworks if name.startswith(f + "_")), key=len, reverse=True):
        rest = name[len(fw) + 1:]
        if rest.startswith("base_"):
            return None
        comps = [c for c in frameworks[fw] if rest == c or rest.startswith(c + "_")]
        if comps:
            comp = max(comps, key=len)
            return None if mpi.built(fw, comp) else f"--mca {name}: " + mpi.why_not(fw, comp)
        return f"--mca {name}: Open MPI {mpi.version}'s {fw} framework has no component that {name!r} names"
    if name.split("_", 1)[0] in PROJECTS:
        return None
    return f"--mca {name}: Open MPI {mpi.version} has no framework or registered parameter that {name!r} names"


def _option(mpi: OpenMPI, token: str) -> str | None:
    """The option's name when this mpirun accepts ``token`` as an option, else None.

    Both 4.1 (opal_cmd_line: long, single-dash or one-letter names, with one dash or
    two) and PRRTE's ompi personality (a one-dash name of more than one letter is taken
    as --name) accept a known name with either dash form.
    """
    name = token.lstrip("-").split("=", 1)[0]
    return name if name in mpi.options else None


def check_command(mpi: OpenMPI, tokens: list[str]) -> list[str]:
    """Problems with an ``mpirun ...`` command line (tokens from shlex), up to its program."""
    if not tokens or Path(tokens[0]).name not in ("mpirun", "mpiexec"):
        return []
    problems: list[str] = []
    i = 1
    while i < len(tokens):
        token = tokens[i]
        if token == "--" or not token.startswith("-"):
            break  # the program
        name = _option(mpi, token)
        if name is None:
            problems.append(f"mpirun of Open MPI {mpi.version} has no option {token!r}")
            i += 1
            continue
        nargs = 0 if "=" in token else mpi.options[name]
        if name.endswith("mca") and nargs == 2:
            if i + 2 >= len(tokens):
                problems.append(f"{token} needs a parameter name and a value")
                break
            why_mca = check_mca(mpi, tokens[i + 1], tokens[i + 2])
            if why_mca:
                problems.append(why_mca)
        i += 1 + nargs
    return problems


def check_env(mpi: OpenMPI, env: dict[str, str]) -> list[str]:
    """Problems with OMPI_MCA_* settings of a job's environment."""
    out = []
    for key, value in sorted(env.items()):
        if key.startswith("OMPI_MCA_"):
            why = check_mca(mpi, key[len("OMPI_MCA_"):], value)
            if why:
                out.append(f"{key}={value}: {why}")
    return out


def check_job_line(mpi: OpenMPI, command: str) -> list[str]:
    """Problems with one job step's command (``mpirun ... prog args``), as shell text."""
    return check_command(mpi, shlex.split(command))


def mca_settings(line: str, env: dict[str, str]) -> dict[str, str]:
    """The MCA parameters an mpirun line (``--mca``/``-mca NAME VALUE``) and an
    environment (``OMPI_MCA_NAME``) set; the command line wins, as in Open MPI."""
    out = {k[len("OMPI_MCA_"):]: v for k, v in env.items() if k.startswith("OMPI_MCA_")}
    tokens = shlex.split(line)
    for i, token in enumerate(tokens[:-2]):
        if token.lstrip("-") == "mca":
            out[tokens[i + 1]] = tokens[i + 2]
    return out
