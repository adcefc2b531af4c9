"""Where a lab departs from its sources: what differs, the source's value, the kit's, and why.

Two kinds, listed together by ``pfslab lab deviations``, kept in ``provenance.json`` and
shown in the report:

- declared: the lab file's ``deviations`` list (labs/schema.json), one entry per choice
  the kit made where the source is silent or cannot be followed; a lab that ``extends``
  another inherits the base's entries (pfslab/labs.py) and adds its own;
- derived from the lab's data, so that they cannot go stale: a step's ``seed_args``
  beside the ``args`` that run, the launcher lines (``launcher.seed_mpirun``, a
  workload's ``seed_launcher``) with ``launcher.deviation``, every tool version the
  lab's toolchain view does not share with its source (pfslab/toolchain.py), and the
  file system release the nodes install.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from pfslab import labs, toolchain


@dataclass(frozen=True)
class Deviation:
    """One departure: what, the source's value, the kit's, why, and the file that says so."""

    what: str
    seed: str
    kit: str
    why: str
    file: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else "not stated"


def _chain(path: Path, labs_dir: Path | None) -> list[tuple[Path, dict[str, Any]]]:
    """The lab file and the files it ``extends``, base first (read raw: each entry is
    attributed to the file that writes it)."""
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        return []
    base = data.get("extends")
    if isinstance(base, str) and base != path.stem:
        base_path = next((d / f"{base}.yaml" for d in (path.parent, labs_dir or labs.LABS_DIR)
                          if (d / f"{base}.yaml").is_file()), None)
        if base_path is not None:
            return [*_chain(base_path, labs_dir), (path, data)]
    return [(path, data)]


def declared(path: Path, labs_dir: Path | None = None) -> list[Deviation]:
    """The ``deviations`` entries of a lab file and of the labs it extends, base first."""
    out = []
    for file, data in _chain(path, labs_dir):
        for entry in data.get("deviations") or []:
            if isinstance(entry, dict):
                out.append(Deviation(_text(entry.get("what")), _text(entry.get("seed")), _text(entry.get("kit")),
                                     _text(entry.get("why")), file.name))
    return out


def derived(lab: dict[str, Any]) -> list[Deviation]:
    """Departures the lab's data states: seed_args, launcher lines, tool versions, release."""
    out = []
    launcher = lab.get("launcher", {})
    why_launcher = _text(launcher.get("deviation") or "the lab file's launcher.deviation gives no reason")
    if launcher.get("seed_mpirun"):
        out.append(Deviation("MPI launcher line (launcher.mpirun)", _text(launcher["seed_mpirun"]),
                             _text(launcher.get("mpirun")), why_launcher, _file_writing(lab["name"], "launcher")))
    for workload in lab.get("workloads", []):
        if workload.get("seed_launcher"):
            out.append(Deviation(f"MPI launcher line of {workload['id']} (workloads[{workload['id']}].launcher)",
                                 _text(workload["seed_launcher"]), _text(workload.get("launcher")), why_launcher,
                                 _file_writing(lab["name"], "workloads")))
        for index, step in enumerate(workload.get("steps", [])):
            if isinstance(step, dict) and "seed_args" in step:
                out.append(Deviation(f"{workload['tool']} arguments of {workload['id']} "
                                     f"(workloads[{workload['id']}].steps[{index}].args)",
                                     _text(step["seed_args"]), _text(step["args"]), _text(step.get("deviation")),
                                     _file_writing(lab["name"], "workloads")))
    return out + toolchain_versions(lab) + release(lab)


def toolchain_versions(lab: dict[str, Any]) -> list[Deviation]:
    """Every tool whose version the lab's source states and its view runs another of."""
    stated = labs.setting(lab, "benchmark.source_tools") or {}
    view = toolchain.view_of(lab)
    have = toolchain.versions(view)
    reasons = toolchain.seed_reasons()
    out = []
    for tool, seed_versions in sorted(stated.items()):
        for seed in [seed_versions] if isinstance(seed_versions, str) else seed_versions:
            runs = have.get(tool)
            if runs is not None and toolchain.same_version(runs, seed):
                continue
            why = reasons.get((tool, seed), (None, "spack/spack.yaml has no '# seed:' line for it"))[1]
            kit = f"{tool} {runs}" if runs else f"no {tool}"
            out.append(Deviation(f"{tool} version (benchmark.toolchain: the {view} view, {toolchain.root(view)})",
                                 f"{tool} {seed}", kit, why, "spack/spack.yaml"))
    return out


def release(lab: dict[str, Any]) -> list[Deviation]:
    """The file system release the nodes run, where it is not the one the source ran."""
    from pfslab import registry

    rel = labs.release(lab)
    if not rel["characterised"]:
        return []
    if rel["installed"] is None:
        return [Deviation(f"{rel['type']} release the nodes run", _text(rel["characterised"]),
                          f"the release the nodes' {rel['type']} packages bring, which may differ",
                          "the packages come from the distribution or the user's installer: not the kit's to choose",
                          _file_writing(lab["name"], "filesystem"))]
    if str(rel["installed"]) == str(rel["characterised"]):
        return []
    node: Any = registry.family(rel["type"]).settings
    for part in [registry.family(rel["type"]).family, *rel["installed_field"].split(".")[2:]]:
        node = node.get("properties", node).get(part, {}) if isinstance(node, dict) else {}
    return [Deviation(f"{rel['type']} release the nodes install ({rel['installed_field']})",
                      _text(rel["characterised"]), _text(rel["installed"]),
                      _text(node.get("description") or "the family's default release"),
                      f"families/{rel['type']}/family.json")]


def listing(lab: dict[str, Any], path: Path) -> list[Deviation]:
    """Every departure of a lab, declared then derived: what ``pfslab lab deviations``
    prints, provenance keeps and the report shows."""
    return declared(path) + derived(lab)


def _file_writing(name: str, key: str) -> str:
    """The lab file that writes a lab's ``key``: its own, or that of the lab it
    reproduces (workloads only) or extends (labs.resolve takes it from there)."""
    path = labs.lab_path(name)
    data = yaml.safe_load(path.read_text()) or {}
    for parent in ("reproduces", "extends") if key == "workloads" else ("extends",):
        if key not in data and isinstance(data.get(parent), str):
            return _file_writing(data[parent], key)
    return path.name


def lines(devs: list[Deviation]) -> list[str]:
    """The listing as text: one block per departure."""
    out = []
    for dev in devs:
        out += [f"- {dev.what}  [{dev.file}]", f"    seed: {dev.seed}", f"    kit:  {dev.kit}", f"    why:  {dev.why}"]
    return out
