"""The kit's registry: file-system families (``families/<filesystem>/family.json``, beside
the family's role script ``families/<filesystem>/role``),
targets (``targets/<target>/target.json``, a folder per target) and schedulers
(``registry/schedulers/<scheduler>.json``).

A family file is the one place that says which roles a file system has, the order
they start in, what a cloud node runs for them at first boot, which of them hold
data or run the benchmarks, and the schema of the lab file's settings for it.
Terraform (jsondecode), Packer, the shell (jq) and this module read the same files;
``labs/schema.json`` takes its enums and settings from them (:func:`generate_schema`).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

from pfslab import KIT_ROOT
from pfslab.errors import KitError

if TYPE_CHECKING:
    import argparse

REGISTRY_DIR: Path = KIT_ROOT / "registry"
#: One folder per file-system family: a new family is a new folder, found by its family.json.
FAMILIES_DIR: Path = KIT_ROOT / "families"
FAMILY_SCHEMA: Path = REGISTRY_DIR / "family.schema.json"
#: A target is a folder: target.json, its adapter (adapter.sh), when it provisions, its
#: Terraform root and module, and when it has commands, its Python module (target.json's
#: python). Listing the folders is how every reader finds them.
TARGETS_DIR: Path = KIT_ROOT / "targets"
TARGET_SCHEMA: Path = TARGETS_DIR / "target.schema.json"
TARGET_FILE = "target.json"
TARGET_ADAPTER = "adapter.sh"
SCHEDULERS_DIR: Path = REGISTRY_DIR / "schedulers"
SCHEDULER_SCHEMA: Path = REGISTRY_DIR / "scheduler.schema.json"
LAB_SCHEMA: Path = KIT_ROOT / "labs" / "schema.json"

#: Marks what generate_schema writes into labs/schema.json.
GENERATED = "generated from registry/*/*.json by `pfslab registry schema --write`; edit those files"


class RegistryError(KitError, ValueError):
    """A family file is invalid; the message is one line naming the file and field."""


@dataclass(frozen=True)
class Role:
    name: str
    component: str
    phase: int
    required: int
    boot: tuple[str, ...]
    data: bool
    client: bool
    #: The cluster's files (paths.cluster) a node with this role gets from the bootstrap node.
    cluster_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    filesystem: str
    family: str
    title: str
    roles: tuple[Role, ...]
    settings: dict[str, Any]
    #: The dotted setting under filesystem.<family> naming the release the role installs
    #: (its default is the kit's release), or None when the kit does not choose it.
    installed_version: str | None = None
    #: How a client tells the file system's version (run provenance), or None.
    version_command: tuple[str, ...] | None = None
    #: Spack variants the family's toolchain profile requires of a tool (family.json's
    #: toolchain.require, e.g. ior: +beegfs): what its IOR is built with.
    tool_variants: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def variants_of(self, tool: str) -> tuple[str, ...]:
        return dict(self.tool_variants).get(tool, ())

    def role_names(self) -> list[str]:
        return [r.name for r in self.roles]

    def phases(self, count: int) -> list[list[str]]:
        """Role names per phase, padded to ``count`` phases."""
        return [[r.name for r in self.roles if r.phase == p] for p in range(count)]


@dataclass(frozen=True)
class Target:
    target: str
    title: str
    remote: bool
    terraform_root: str
    settings: dict[str, Any]
    #: The nodes are network namespaces of this host (target local): what the kit does
    #: differently for them asks this, never the target's name.
    namespaces: bool
    #: False: the storage, nodes and scheduler are already there (target site); lab-up
    #: only checks them and there is no Terraform root to plan.
    provisions: bool = True
    #: scripts/bench runs the lab's benchmarks detached from the terminal and follows them
    #: (target site: the user's SSH session to the submit node may drop mid-run).
    detached_runs: bool = False
    #: The Python module giving the target its commands (``pfslab <target> ...``),
    #: targets/<target>/<python>, or None (no commands); :func:`target_module` imports it.
    module: Path | None = None

    @property
    def settings_key(self) -> str:
        return f"{self.target}_target"


@dataclass(frozen=True)
class SchedulerRole:
    name: str
    component: str
    #: Which nodes get it: "login" (the login node) or "clients" (every client).
    on: str
    boot: tuple[str, ...]


@dataclass(frozen=True)
class Scheduler:
    scheduler: str
    title: str
    roles: tuple[SchedulerRole, ...]

    def role_names(self) -> list[str]:
        return [r.name for r in self.roles]


def _where(path: Path) -> Path:
    return path.relative_to(KIT_ROOT) if path.is_relative_to(KIT_ROOT) else path


def _read(path: Path, schema: Path) -> dict[str, Any]:
    """A registry file, validated against its schema; errors are one line."""
    import jsonschema

    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise RegistryError(f"{_where(path)}: not JSON ({err})") from None
    errors = sorted(jsonschema.Draft202012Validator(json.loads(schema.read_text())).iter_errors(doc),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        field = ".".join(map(str, first.absolute_path)) or "(top level)"
        raise RegistryError(f"{_where(path)}: {field}: {first.message}")
    return doc


def _load_target(path: Path) -> Target:
    doc = _read(path, TARGET_SCHEMA)
    where, name, folder = _where(path), doc["target"], path.parent
    if folder.name != name:
        raise RegistryError(f"{where}: target {name!r} must equal its folder's name {folder.name!r}")
    if not (folder / TARGET_ADAPTER).is_file():
        raise RegistryError(f"{where}: target {name!r} has no adapter {_where(folder / TARGET_ADAPTER)}")
    if f"{name}_target" not in doc["settings"]:
        raise RegistryError(f"{where}: settings has no {name + '_target'!r} key (the schema of targets.{name})")
    section = doc["settings"][f"{name}_target"]
    if not doc.get("provisions", True) and "nodes" not in section.get("required", []):
        # How every reader finds such a lab's nodes (pfslab.labs, pfslab.site_health): by this flag, not by name.
        raise RegistryError(f"{where}: settings.{name}_target: requires no 'nodes'; a target that provisions nothing "
                            "must (its nodes, a count or names, that lab-up checks and the run's watchdog asks the scheduler about)")
    module = folder / doc["python"] if "python" in doc else None
    if module is not None and not module.is_file():
        raise RegistryError(f"{where}: python {doc['python']!r}: no such file {_where(module)} "
                            "(a module beside target.json, or leave python out: no commands)")
    return Target(name, doc["title"], doc["remote"], doc.get("terraform_root", ""), doc["settings"],
                  doc["namespaces"], doc.get("provisions", True), doc.get("detached_runs", False), module)


@lru_cache(maxsize=4)
def targets(directory: Path = TARGETS_DIR) -> dict[str, Target]:
    """Every target, keyed by name, in folder-name order."""
    found = {p.parent.name: _load_target(p) for p in sorted(directory.glob(f"*/{TARGET_FILE}"))}
    if not found:
        raise RegistryError(f"{directory}: no target folder (targets/<target>/{TARGET_FILE})")
    return found


def target_of(lab: dict[str, Any]) -> Target:
    """The registry entry of the target ``lab`` runs on (its ``target``)."""
    known = targets()
    name = lab.get("target")
    if name not in known:
        raise RegistryError(f"lab {lab.get('name', '?')}: target {name!r} is not one of {', '.join(known)}")
    return known[str(name)]


class TargetCommands(Protocol):
    """What a target's Python module (target.json's python) defines: its commands,
    ``pfslab <target> ACTION ...``."""

    #: One line for ``pfslab --help``.
    HELP: str

    def add_commands(self, parser: argparse.ArgumentParser) -> None:
        """Add the actions and options to ``pfslab <target>``'s own parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the parsed action; the exit status (a KitError: one line, exit 2)."""


#: The names a target's module must define (:class:`TargetCommands`).
TARGET_MODULE_API = ("HELP", "add_commands", "run")


def target_module(target: Target) -> TargetCommands:
    """The Python module ``target``'s target.json names, imported from its folder (once
    per file; the kit has no package for it). A missing file or a module that lacks
    part of :class:`TargetCommands` is one RegistryError line."""
    if target.module is None:
        raise RegistryError(f"target {target.target!r} has no Python module (its target.json names no python)")
    return _import_module(target.target, target.module)


@lru_cache(maxsize=None)
def _import_module(name: str, path: Path) -> TargetCommands:
    if not path.is_file():
        raise RegistryError(f"{_where(path)}: no such file (the python of target {name!r})")
    spec = importlib.util.spec_from_file_location(f"pfslab_target_{name}", path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"{_where(path)}: not a Python module (the python of target {name!r})")
    module: ModuleType = importlib.util.module_from_spec(spec)
    # Registered before it runs, as an import would: dataclasses look their module up.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    missing = [attr for attr in TARGET_MODULE_API if not hasattr(module, attr)]
    if missing:
        raise RegistryError(f"{_where(path)}: defines no {', '.join(missing)} "
                            f"(a target's module defines {', '.join(TARGET_MODULE_API)})")
    return cast(TargetCommands, module)


def _load_scheduler(path: Path) -> Scheduler:
    doc = _read(path, SCHEDULER_SCHEMA)
    where, name = _where(path), doc["scheduler"]
    if path.stem != name:
        raise RegistryError(f"{where}: scheduler {name!r} must equal the file name {path.stem!r}")
    for role in doc["roles"]:
        if role["name"] != f"{name}-{role['component']}":
            raise RegistryError(f"{where}: role {role['name']!r} must be named {name}-{role['component']} (<scheduler>-<component>)")
    roles = tuple(SchedulerRole(r["name"], r["component"], r["on"], tuple(r["boot"])) for r in doc["roles"])
    return Scheduler(name, doc["title"], roles)


@lru_cache(maxsize=4)
def schedulers(directory: Path = SCHEDULERS_DIR) -> dict[str, Scheduler]:
    """Every scheduler, keyed by the lab file's scheduler.type, in file-name order."""
    return {p.stem: _load_scheduler(p) for p in sorted(directory.glob("*.json"))}


def scheduler(kind: str) -> Scheduler:
    known = schedulers()
    if kind not in known:
        raise RegistryError(f"unknown scheduler {kind!r}; known: {', '.join(known) or 'none'} (registry/schedulers)")
    return known[kind]


def _load(path: Path) -> Family:
    doc = _read(path, FAMILY_SCHEMA)
    where = _where(path)
    fs, fam = doc["filesystem"], doc["family"]
    if path.parent.name != fs:
        raise RegistryError(f"{where}: filesystem {fs!r} must equal the folder name {path.parent.name!r}")
    for role in doc["roles"]:
        if role["name"] != f"{fam}-{role['component']}":
            raise RegistryError(f"{where}: role {role['name']!r} must be named {fam}-{role['component']} (<family>-<component>)")
    if fam not in doc["settings"]:
        raise RegistryError(f"{where}: settings has no {fam!r} key (the schema of filesystem.{fam})")
    script = path.parent / "role"
    if not (script.is_file() and os.access(script, os.X_OK)):
        raise RegistryError(f"{where}: no executable role script beside it ({_where(script)}: nodes run it as scripts/roles/{fam})")
    if not any(r.get("client") for r in doc["roles"]):
        raise RegistryError(f"{where}: no role is marked client: true (who runs the benchmarks?)")
    roles = tuple(
        Role(r["name"], r["component"], r["phase"], r["required"], tuple(r["boot"]),
             bool(r.get("data")), bool(r.get("client")), tuple(r.get("cluster_files") or ()))
        for r in doc["roles"]
    )
    command = doc.get("version_command")
    required = (doc.get("toolchain") or {}).get("require") or {}
    return Family(fs, fam, doc["title"], roles, doc["settings"], doc.get("installed_version"),
                  tuple(command) if command else None,
                  tuple((tool, tuple(variants)) for tool, variants in sorted(required.items())))


@lru_cache(maxsize=4)
def families(directory: Path = FAMILIES_DIR) -> dict[str, Family]:
    """Every family, keyed by its file system type, in folder-name order."""
    found = {p.parent.name: _load(p) for p in sorted(directory.glob("*/family.json"))}
    if not found:
        raise RegistryError(f"{directory}: no family folder (families/<filesystem>/family.json)")
    seen: dict[str, str] = {}
    for fs, fam in found.items():
        if fam.family in seen:
            raise RegistryError(f"families/{fs}/family.json: family {fam.family!r} is also {seen[fam.family]}'s")
        seen[fam.family] = fs
    return found


def family(fs_type: str) -> Family:
    known = families()
    if fs_type not in known:
        raise RegistryError(f"unknown file system {fs_type!r}; known: {', '.join(known)}")
    return known[fs_type]


def role_script(family_name: str, kit_root: Path = KIT_ROOT) -> Path:
    """Where the kit at ``kit_root`` keeps a role's script: a family's
    ``families/<fs>/role``, else the kit's own roles (common, the scheduler's) under
    ``scripts/roles/``. Nodes run every one of them as ``scripts/roles/<family>``."""
    directory = kit_root / "families"
    if any(directory.glob("*/family.json")):
        for fam in families(directory).values():
            if fam.family == family_name:
                return directory / fam.filesystem / "role"
    return kit_root / "scripts" / "roles" / family_name


def all_roles() -> list[Role]:
    return [r for f in families().values() for r in f.roles]


#: MUNGE's key: every Slurm node's (the scheduler is not a family; its one file stays here).
MUNGE_KEY = "munge.key"


def cluster_files_for(roles: Iterable[str]) -> list[str]:
    """The cluster's files a node with these roles gets, sorted: its families' roles'
    ``cluster_files``, and MUNGE's key for a Slurm role (pfslab/transport/local_node.py says which file is whose)."""
    names = set(roles)
    files = {f for r in all_roles() if r.name in names for f in r.cluster_files}
    if any(n.startswith("slurm-") for n in names):
        files.add(MUNGE_KEY)
    return sorted(files)


def data_roles() -> frozenset[str]:
    return frozenset(r.name for r in all_roles() if r.data)


def client_roles() -> frozenset[str]:
    return frozenset(r.name for r in all_roles() if r.client)


def phase_count() -> int:
    """Phases every family's list is padded to: the most any family needs."""
    return 1 + max(r.phase for r in all_roles())


# ---- labs/schema.json ------------------------------------------------------------------

def generate_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its family parts made from the registry: the file-system type and
    role enums, the per-family settings fields and their ``if type then required``."""
    out = copy.deepcopy(schema)
    fams = families()
    tgts = targets()
    defs = out["$defs"]
    owned = {key for f in fams.values() for key in f.settings} | {key for t in tgts.values() for key in t.settings}
    # Delete then add, so a second run writes the same order as the first.
    for key in [k for k, v in defs.items() if k in owned or v.get("$comment") == GENERATED]:
        del defs[key]
    for settings in [f.settings for f in fams.values()] + [t.settings for t in tgts.values()]:
        for key, definition in settings.items():
            defs[key] = {"$comment": GENERATED, **definition}
    fs = defs["filesystem"]
    props = fs["properties"]
    props["type"]["enum"] = list(fams)
    refs = {f"#/$defs/{key}" for key in owned}
    for key in [k for k, v in props.items() if v.get("$comment") == GENERATED or v.get("$ref") in refs]:
        del props[key]
    for f in fams.values():
        props[f.family] = {"$comment": GENERATED, "$ref": f"#/$defs/{f.family}"}
    fs["allOf"] = [
        {"if": {"properties": {"type": {"const": f.filesystem}}}, "then": {"required": [f.family]}}
        for f in fams.values()
    ]
    defs["node_group"]["properties"]["roles"]["items"]["enum"] = [r.name for r in all_roles()]
    defs["os_tuning"]["properties"]["roles"]["items"]["enum"] = [r.name for r in all_roles()]
    # none: no scheduler to submit through (a site lab that runs on this machine).
    defs["scheduler"]["properties"]["type"]["enum"] = [*schedulers(), "none"]
    out["properties"]["target"]["enum"] = list(tgts)
    defs["targets"]["properties"] = {t.target: {"$ref": f"#/$defs/{t.settings_key}"} for t in tgts.values()}
    return out


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schema(path: Path = LAB_SCHEMA) -> bool:
    """Regenerate labs/schema.json in place; True when it changed."""
    current = path.read_text()
    wanted = schema_text(generate_schema(json.loads(current)))
    if wanted != current:
        path.write_text(wanted)
    return wanted != current


def schema_is_current(path: Path = LAB_SCHEMA) -> bool:
    current = path.read_text()
    return schema_text(generate_schema(json.loads(current))) == current
