"""Which stack of the kit's Spack toolchain a lab runs, and what it holds.

spack/spack.yaml builds two views over one concretization: ``default``
(/opt/pfslab/view: IOR 4.0.0, Open MPI 5.0.8 ...) and ``seed`` (/opt/pfslab/view-seed:
the seeds' IOR/mdtest 3.3.0, Open MPI 4.1.8, fio 3.19, IOzone). A lab names its view in
``benchmark.toolchain``; it is part of the lab (and of the resolved lab a remote lab's
login node gets), so every run of the lab, wherever it is launched, uses the same tools,
and the command lines are rendered for the versions in that view (the IOR option syntax:
pfslab/tools/ior_options.py).

Where the lab's source states the versions it ran (``benchmark.source_tools``), each
one the view does not have is a departure, listed by ``pfslab lab deviations`` with the
reason spack.yaml's ``# seed:`` line gives for its stand-in (pfslab/deviations.py reads them here).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml

from pfslab import KIT_ROOT, labs

SPACK_YAML = KIT_ROOT / "spack" / "spack.yaml"

#: Tools that ship inside another package's install (the ior package installs mdtest).
SHIPPED_WITH: dict[str, str] = {"mdtest": "ior"}
#: spack.yaml's ``# seed: tool version (source) -> pin | why`` lines (tests/unit/test_spack_env.py).
_SEED_LINE = re.compile(r"^# seed: (\S+) (\S+) \(([^)]+)\) -> (\S+) \| (.+)$")
_ROOT = re.compile(r"^([a-z0-9-]+)@=([^\s+~^]+)")


@lru_cache(maxsize=1)
def _env() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SPACK_YAML.read_text())["spack"]
    return data


def _roots() -> list[tuple[str, str]]:
    """(name, version) of every root spec, definitions expanded."""
    env = _env()
    defs = {name: specs for entry in env["definitions"] for name, specs in entry.items()}
    out = []
    for spec in env["specs"]:
        for root in defs[spec[1:]] if spec.startswith("$") else [spec]:
            match = _ROOT.match(root)
            if match:
                out.append((match.group(1), match.group(2)))
    return out


def views() -> list[str]:
    """The views spack.yaml defines (the values benchmark.toolchain may take)."""
    return sorted(_env()["view"])


def view_of(lab: dict[str, Any]) -> str:
    """The lab's view: benchmark.toolchain, or the schema's default."""
    return str(labs.setting(lab, "benchmark.toolchain"))


def root(view: str) -> str:
    """Where the view is installed on the nodes."""
    spec = _env()["view"].get(view)
    if spec is None:
        raise KeyError(f"spack/spack.yaml has no view {view!r} (it has: {', '.join(views())})")
    return str(spec["root"])


def versions(view: str) -> dict[str, str]:
    """Tool -> version of every root the view links (its select, or every root but its
    exclude), plus the tools installed with one of them (mdtest with ior)."""
    spec = _env()["view"].get(view)
    if spec is None:
        raise KeyError(f"spack/spack.yaml has no view {view!r} (it has: {', '.join(views())})")

    def matches(name: str, version: str, patterns: list[str]) -> bool:
        return any(m is not None and m.groups() == (name, version) for m in map(_ROOT.match, patterns))

    out: dict[str, str] = {}
    for name, version in _roots():
        if "select" in spec and not matches(name, version, spec["select"]):
            continue
        if matches(name, version, spec.get("exclude", [])):
            continue
        out[name] = version
    for tool, package in SHIPPED_WITH.items():
        if package in out:
            out[tool] = out[package]
    return out


def tool_version(lab: dict[str, Any], tool: str) -> str:
    """The version of ``tool`` the lab runs (KeyError when its view has none)."""
    view = view_of(lab)
    have = versions(view)
    if tool not in have:
        raise KeyError(f"the {view} view (spack/spack.yaml) has no {tool}; it has: {', '.join(sorted(have))}")
    return have[tool]


def same_version(a: str, b: str) -> bool:
    # Spack spells IOzone's releases 3_491; the seeds write 3.487.
    return a.replace("_", ".") == b.replace("_", ".")


def seed_reasons() -> dict[tuple[str, str], tuple[str, str]]:
    """(tool, seed version) -> (stand-in pin, why), from spack.yaml's ``# seed:`` lines."""
    out = {}
    for line in SPACK_YAML.read_text().splitlines():
        match = _SEED_LINE.match(line)
        if match:
            tool, seed, _source, pin, why = match.groups()
            out[(tool, seed)] = (pin, why)
    return out
