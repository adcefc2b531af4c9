"""Lab files: find, load and validate ``labs/<name>.yaml``.

A lab file is the single description of a lab; everything else (Terraform,
roles, ReFrame, reports) reads it. Validation happens here, before anything
runs, and every error is one line naming the file, the field and what is
allowed.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pfslab import KIT_ROOT, layout, registry
from pfslab.errors import KitError

LABS_DIR: Path = KIT_ROOT / "labs"
SCHEMA_PATH: Path = LABS_DIR / "schema.json"

class LabError(KitError, ValueError):
    """A lab is unknown or its file is invalid; the message is one line."""


def lab_names(labs_dir: Path = LABS_DIR) -> list[str]:
    """Names of the labs shipped in ``labs_dir``, sorted."""
    return sorted(p.stem for p in labs_dir.glob("*.yaml"))


def lab_path(name_or_path: str, labs_dir: Path = LABS_DIR) -> Path:
    """Resolve a lab name (``local``) or a path to a lab file."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    path = labs_dir / f"{name_or_path}.yaml"
    if path.is_file():
        return path
    known = ", ".join(lab_names(labs_dir)) or "none"
    raise LabError(f"unknown lab {name_or_path!r}; labs that exist: {known}")


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return schema


def schema_default(definition: str, field: str) -> Any:
    """The ``default`` the schema states for a field of one of its definitions: a default
    lives in the schema, where the lab file's reader finds it documented."""
    return _schema()["$defs"][definition]["properties"][field]["default"]


def schema_enum(definition: str, field: str) -> list[str]:
    """The values the schema allows for a field of one of its definitions."""
    return [str(v) for v in _schema()["$defs"][definition]["properties"][field]["enum"]]


def _resolve_ref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _schema()["$defs"][str(node["$ref"]).rsplit("/", 1)[-1]]
    return node


def schema_at(field: str) -> dict[str, Any] | None:
    """The schema of a dotted lab field (``targets.local.bridge``), or None."""
    node: dict[str, Any] = _schema()
    for key in field.split("."):
        props = _resolve_ref(node).get("properties", {})
        if key not in props:
            return None
        node = props[key]
    return _resolve_ref(node) | {k: v for k, v in node.items() if k != "$ref"}


def _fill_defaults(node: dict[str, Any], data: Any) -> None:
    node = _resolve_ref(node)
    if isinstance(data, dict):
        for key, child in node.get("properties", {}).items():
            if key not in data:
                default = child.get("default", _resolve_ref(child).get("default"))
                if default is not None:
                    data[key] = copy.deepcopy(default)
            if key in data:
                _fill_defaults(child, data[key])
        # Maps of named entries (targets.aws.groups.<group>) take their entries' defaults.
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in data.items():
                if key not in node.get("properties", {}):
                    _fill_defaults(extra, value)
    elif isinstance(data, list) and isinstance(node.get("items"), dict):
        for item in data:
            _fill_defaults(node["items"], item)


def setting(lab: dict[str, Any], field: str) -> Any:
    """A dotted field of the lab, or the schema's default for it when the lab leaves it
    out (a lab from load() has them filled; a raw document may not)."""
    value: Any = lab
    for key in field.split("."):
        if not isinstance(value, dict) or key not in value:
            return (schema_at(field) or {}).get("default")
        value = value[key]
    return value


def with_defaults(lab: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    """The lab with every default the schema states filled in, for the sections it has
    plus ``benchmark`` and the section of its own target (and of ``target``, when it is
    rendered for another), so that no reader keeps its own copy of a default."""
    out = copy.deepcopy(lab)
    out.setdefault("benchmark", {})
    for name in {out["target"], target or out["target"]}:
        out.setdefault("targets", {}).setdefault(name, {})
    _fill_defaults(_schema(), out)
    return out


def _field_path(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _schema_errors(data: Any) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    messages: list[str] = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        where = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            extra = sorted(set(error.instance) - set(allowed))
            for key in extra:
                messages.append(
                    f"{_field_path([*where, key])}: unknown field; allowed here: {', '.join(allowed)}"
                )
            continue
        if error.validator == "pattern" and error.schema.get("description"):
            # The description says what is meant; the pattern alone rarely does.
            meant = str(error.schema["description"]).rstrip(".")
            messages.append(
                f"{_field_path(where)}: {error.instance!r} is not allowed; allowed: {meant} (pattern {error.validator_value})"
            )
            continue
        if error.validator == "enum":
            choices = ", ".join(str(v) for v in error.validator_value)
            messages.append(f"{_field_path(where)}: {error.instance!r} is not allowed; allowed: {choices}")
            continue
        messages.append(f"{_field_path(where)}: {error.message}")
    return messages


def _semantic_errors(data: dict[str, Any], stem: str) -> list[str]:
    """Rules JSON Schema cannot say: names match, roles suffice, ids are unique."""
    errors: list[str] = []
    if data.get("name") != stem:
        errors.append(f"name: {data.get('name')!r} must equal the file name {stem!r}")
    groups = data.get("node_groups", [])
    names = [g["name"] for g in groups]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"node_groups: group name {dup!r} is used twice")
    fs_type = data.get("filesystem", {}).get("type")
    counts: dict[str, int] = {}
    for group in groups:
        for role in group["roles"]:
            counts[role] = counts.get(role, 0) + group["count"]
    family = registry.families().get(fs_type) if isinstance(fs_type, str) else None
    target = registry.targets().get(str(data.get("target")))
    # A lab on storage that is already there describes its clients only: nobody
    # installs its servers, so no role count is owed.
    provisions = target is None or target.provisions
    for role in family.roles if family and provisions else ():
        fewest = role.required
        if counts.get(role.name, 0) < fewest:
            errors.append(f"node_groups: a {fs_type} lab needs at least {fewest} node(s) with role {role.name}")
    foreign = sorted(r for r in counts if family and r not in family.role_names())
    for role in foreign:
        errors.append(f"node_groups: role {role} does not belong to a {fs_type} lab")
    ceph = data.get("filesystem", {}).get("ceph")
    # filesystem.ceph is a CephFS lab's section (its family's settings schema).
    if ceph and ceph.get("failure_domain", "host") == "osd":
        osds = layout.osd_count(data)
        if osds < ceph["pool_size"]:
            errors.append(
                f"filesystem.ceph.pool_size: {ceph['pool_size']} replicas need at least as many OSDs; the lab has {osds}"
            )
    named_login = data.get("network", {}).get("login")
    node_names = [n["name"] for n in layout.nodes(data)]
    if named_login and named_login not in node_names:
        errors.append(f"network.login: {named_login!r} is not a node of the lab; its nodes: {', '.join(node_names)}")
    for imported in data.get("imports", []):
        if imported == stem:
            errors.append(f"imports: lab {stem} cannot import itself")
        elif not (LABS_DIR / f"{imported}.yaml").is_file():
            errors.append(f"imports: unknown lab {imported!r}; labs that exist: {', '.join(lab_names())}")
    errors += _tuning_errors(data, counts)
    ids = [w["id"] for w in data.get("workloads", [])]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        errors.append(f"workloads: id {dup!r} is used twice")
    errors += _path_errors(data)
    if not provisions:
        errors += site_errors(data)
    try:
        _check_subnet(data, groups)
    except LabError as err:
        errors.append(str(err))
    return errors


def site_errors(data: dict[str, Any]) -> list[str]:
    """A site lab's nodes as its section gives them agree with its node groups' clients
    (the suite spreads over those), and scheduler none means this machine only."""
    site = data.get("targets", {}).get(data["target"], {})
    given = site.get("nodes")
    count = given if isinstance(given, int) else len(given or [])
    clients = sum(g["count"] for g in data.get("node_groups", [])
                  if any(r in registry.client_roles() for r in g["roles"]))
    errors = []
    if given is not None and count != clients:
        errors.append(f"targets.{data['target']}.nodes: {given!r} gives {count} node(s) but node_groups have {clients} client(s); "
                      "allowed: as many nodes as client nodes")
    if (data.get("scheduler") or {}).get("type", "none") == "none" and given is not None and count != 1:
        errors.append(f"targets.{data['target']}.nodes: {given!r} is not allowed with scheduler none; "
                      "allowed: 1 (this machine; more nodes need a scheduler: scheduler.type slurm)")
    return errors


#: The os_tuning settings that change a node's kernel; they go to the nodes of os_tuning.roles.
KERNEL_TUNING = ("sysctl", "transparent_hugepages", "numa_balancing")


def _tuning_errors(data: dict[str, Any], counts: dict[str, int]) -> list[str]:
    """Kernel tuning goes where the lab says (os_tuning.roles): to roles the lab has, and
    never nowhere without a word."""
    tuning = data.get("os_tuning", {})
    roles = tuning.get("roles", [])
    errors = [f"os_tuning.roles: {role!r} is no role of this lab's node groups; they have: {', '.join(counts)}"
              for role in roles if role not in counts]
    kernel = [key for key in KERNEL_TUNING if key in tuning and tuning[key] != {}]
    if kernel and not roles:
        errors.append(f"os_tuning: {', '.join(kernel)} set but os_tuning.roles names no role to apply them to; "
                      f"allowed: roles of this lab ({', '.join(counts)}), e.g. the servers the source tuned")
    return errors


#: Directories a lab may never mount on, export or put under: the running system's own.
#: (A lab path below /mnt, /srv, /scratch, /mmfs1 and the like is the lab's.)
#: root's home (its SSH keys) and the kit's own folder on the nodes are the system's too.
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt/pfslab", "/proc",
               "/root", "/run", "/sbin", "/sys", "/usr", "/var")
#: Directories a lab may use below but never be: mounting on them hides what they hold.
SHARED_DIRS = ("/", "/home", "/media", "/mnt", "/opt", "/srv", "/tmp")
#: What a lab path is made of: the roles put it in shell commands, fstab and exports
#: lines, so no quote, space, $ or ` reaches them; and no hidden component (.ssh).
_PLAIN_PATH = re.compile(r"/|(/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)+")


def _absolute_path_error(field: str, path: str) -> str | None:
    """Why ``path`` may not be a lab's mount point or export, or None when it may."""
    if not _PLAIN_PATH.fullmatch(path):
        return (f"{field}: {path!r} is not allowed; allowed: an absolute path of letters, digits and . _ + - "
                "with no component starting with '.' (no '..', '//', trailing '/', quotes, spaces or $)")
    if path in SHARED_DIRS or any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS):
        return (f"{field}: {path!r} is not allowed; allowed: a directory of the lab's own, not a system directory "
                f"({', '.join(SYSTEM_DIRS)} and below) nor one of {', '.join(SHARED_DIRS)} itself (e.g. /mnt/<lab>)")
    return None


def _path_errors(data: dict[str, Any]) -> list[str]:
    """Paths the roles mount on, export or remove benchmark files under, checked before
    any of them is used: a mount on /usr or a scratch of ../.. must never reach a node."""
    errors: list[str] = []
    fs = data.get("filesystem", {})
    checks = [("filesystem.mount", fs.get("mount"))]
    checks.append(("filesystem.nfs.export", fs.get("nfs", {}).get("export")))
    for field, path in checks:
        if isinstance(path, str):
            error = _absolute_path_error(field, path)
            if error:
                errors.append(error)
    scratch = data.get("benchmark", {}).get("scratch")
    if isinstance(scratch, str) and (scratch.startswith("/") or any(p in ("", ".", "..") for p in scratch.split("/"))):
        errors.append(f"benchmark.scratch: {scratch!r} is not allowed; allowed: a relative path under the mount "
                      "without '.', '..', '//' or a trailing '/' (e.g. pfslab-bench)")
    return errors


def _check_subnet(data: dict[str, Any], groups: list[dict[str, Any]]) -> None:
    import ipaddress

    subnet = data.get("network", {}).get("subnet")
    if not isinstance(subnet, str):
        return
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except ValueError:
        raise LabError(f"network.subnet: {subnet!r} is not a network address (e.g. 10.99.0.0/24)") from None
    nodes = sum(g["count"] for g in groups)
    if net.num_addresses - 2 < nodes + setting(data, "network.first_address"):
        raise LabError(f"network.subnet: {subnet} has too few addresses for {nodes} nodes")


def validate(data: Any, stem: str) -> list[str]:
    """All problems of a lab document, each a one-line message (empty when valid)."""
    errors = _schema_errors(data)
    if not errors and isinstance(data, dict):
        errors = _semantic_errors(data, stem)
    return errors


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise LabError(f"{_display(path)}: byte {err.start} is not UTF-8 text; allowed: a lab file is YAML text "
                       "in UTF-8 (is this a binary file?)") from None
    except yaml.reader.ReaderError as err:
        char = err.character if isinstance(err.character, int) else ord(err.character)
        raise LabError(f"{_display(path)}: character U+{char:04X} at position {err.position} cannot be in "
                       "YAML text; allowed: printable characters (is this a binary file?)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "not valid YAML"
        raise LabError(f"{_display(path)}:{where}: {problem}") from None


def merge(base: Any, override: Any) -> Any:
    """``override`` over ``base``: mappings merge key by key; lists and values replace."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    return override


def resolve(path: Path, labs_dir: Path = LABS_DIR, seen: tuple[str, ...] = ()) -> Any:
    """The lab document with every ``extends`` applied (before validation), and the
    workloads of the lab it ``reproduces`` when it lists none of its own."""
    data = _extended(path, labs_dir, seen)
    if isinstance(data, dict) and "workloads" not in data and isinstance(data.get("reproduces"), str):
        seed_path = _neighbour(path, data["reproduces"], labs_dir)
        if not seed_path.is_file():
            raise LabError(f"{_display(path)}: reproduces: unknown lab {data['reproduces']!r}; labs that exist: {', '.join(lab_names(labs_dir))}")
        seed = _extended(seed_path, labs_dir, (*seen, path.stem))
        if isinstance(seed, dict) and "workloads" in seed:
            data["workloads"] = copy.deepcopy(seed["workloads"])
    return data


def _neighbour(path: Path, name: str, labs_dir: Path) -> Path:
    """A lab file kept elsewhere may name its neighbours or the shipped labs."""
    return next((d / f"{name}.yaml" for d in (path.parent, labs_dir) if (d / f"{name}.yaml").is_file()), labs_dir / f"{name}.yaml")


def _extended(path: Path, labs_dir: Path, seen: tuple[str, ...]) -> Any:
    data = _read(path)
    if not isinstance(data, dict) or "extends" not in data:
        return data
    base_name = data["extends"]
    if base_name in seen or base_name == path.stem:
        chain = " -> ".join([*seen, path.stem, base_name])
        raise LabError(f"{_display(path)}: extends: {chain} is a cycle")
    if "title" not in data:
        raise LabError(f"{_display(path)}: title: a lab that extends another needs its own title")
    base_path = _neighbour(path, base_name, labs_dir)
    if not base_path.is_file():
        raise LabError(f"{_display(path)}: extends: unknown lab {base_name!r}; labs that exist: {', '.join(lab_names(labs_dir))}")
    base = _extended(base_path, labs_dir, (*seen, path.stem))
    merged = merge({k: v for k, v in base.items() if k not in ("extends", "sources", "description")}, data)
    # A derived lab departs from the source wherever its base does: it adds entries, it
    # does not replace the base's (pfslab/deviations.py).
    if isinstance(base.get("deviations"), list) and isinstance(data.get("deviations"), list):
        merged["deviations"] = [*base["deviations"], *data["deviations"]]
    return merged


def load(name_or_path: str, labs_dir: Path = LABS_DIR) -> dict[str, Any]:
    """Load and validate a lab; raise :class:`LabError` on the first problem."""
    path = lab_path(name_or_path, labs_dir)
    # ReFrame's test files each expand every lab's workloads: validate each file once.
    stamp = tuple((p, p.stat().st_mtime_ns) for p in sorted(labs_dir.glob("*.yaml"))) + ((path, path.stat().st_mtime_ns),)
    return copy.deepcopy(_load_cached(path, labs_dir, stamp))


@lru_cache(maxsize=64)
def _load_cached(path: Path, labs_dir: Path, stamp: tuple[tuple[Path, int], ...]) -> dict[str, Any]:
    data = resolve(path, labs_dir)
    errors = validate(data, path.stem)
    if errors:
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise LabError(f"{_display(path)}: {errors[0]}{more}")
    return with_defaults(data)


def load_stored(path: Path) -> dict[str, Any]:
    """A lab file stored beside a run (``lab.yaml``): validated under its own name."""
    data = resolve(path)
    name = data.get("name", path.stem) if isinstance(data, dict) else path.stem
    errors = validate(data, str(name))
    if errors:
        raise LabError(f"{_display(path)}: {errors[0]}")
    return with_defaults(data)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(KIT_ROOT))
    except ValueError:
        return str(path)


def release(lab: dict[str, Any]) -> dict[str, Any]:
    """The file system's release: the one the lab was characterised with (filesystem.version,
    a seed lab's is the seed's) and, where the kit chooses what the nodes install (the
    family's ``installed_version`` setting, its default filled in), that one and its field."""
    fs = lab["filesystem"]
    family = registry.family(fs["type"])
    out: dict[str, Any] = {"type": fs["type"], "characterised": fs.get("version"), "installed": None, "installed_field": None}
    if family.installed_version:
        node: Any = fs.get(family.family, {})
        for part in family.installed_version.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        out["installed"] = node
        out["installed_field"] = f"filesystem.{family.family}.{family.installed_version}"
    return out


def nodes(lab: dict[str, Any]) -> list[dict[str, Any]]:
    """The lab's nodes, named ``<group><index>`` (:mod:`pfslab.layout`)."""
    return layout.nodes(lab)


def client_nodes(lab: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes that mount the file system and run benchmark threads."""
    return [n for n in layout.nodes(lab) if layout.is_client(n)]


def system_name(lab: str) -> str:
    """The lab's ReFrame system name: ReFrame allows only letters, digits, '_' and '-'
    (beegfs-small+1 becomes beegfs-small_plus1)."""
    return lab.replace("+", "_plus").replace(".", "_")


_SAFE_NAME = re.compile(r"^[a-z][a-z0-9.+-]*$")


def safe_name(name: str) -> bool:
    return bool(_SAFE_NAME.match(name))
