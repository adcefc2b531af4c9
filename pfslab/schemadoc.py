"""labs/README.md, generated from labs/schema.json: the schema documents itself.

``.venv/bin/pfslab lab docs > labs/README.md`` regenerates it; a unit test fails when
the committed page and the schema disagree, so the two cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

from pfslab import labs, registry

HEADER = """# Lab files

A lab is one storage configuration, described once in `labs/<name>.yaml` and read by
everything else (Terraform's lab plan, the node roles, ReFrame, reports). Files are
validated against [`schema.json`](schema.json) before anything runs; an error names
the field and what is allowed (`.venv/bin/pfslab lab check <lab>`).

A lab file is code, not only data: its workloads' `steps` (args templates), its
`launcher` lines and its `env` values become shell lines of the job scripts the kit runs
as root on the lab's clients, and its role settings and kernel tuning (on the nodes of
`os_tuning.roles`) are applied to the nodes.
Run only lab files you trust, as you would a script; review a lab file from someone else
before `make lab-up` or `make bench`.

A lab may `extends:` another (mappings merge, lists replace) and `imports:` other
labs' workloads to run their shapes in quick mode. Labs shipped:

{labs}

File systems (one folder each in [`families/`](../families): its `family.json`, which
also gives this schema its `filesystem.type` and role names; roles start in phase order):

{families}

This page is generated from the schema by `.venv/bin/pfslab lab docs`; do not edit it.

## Fields
"""


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "oneOf" in node:
        return " or ".join(_type(n, defs) for n in node["oneOf"])
    kind = node.get("type", "object" if "properties" in node else "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and "items" in node:
        return f"list of {_type(node['items'], defs)}"
    if kind == "string" and "pattern" in node:
        return f"string `{node['pattern']}`"
    return str(kind)


def _rows(node: dict[str, Any], defs: dict[str, Any], prefix: str, required: set[str]) -> list[str]:
    out = []
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        target = defs.get(str(child.get("$ref", "")).rsplit("/", 1)[-1], {})
        if target and "properties" not in target:
            # A shared leaf (public_ip, ssh_cidrs) is documented where it is used.
            child = {**target, **{k: v for k, v in child.items() if k != "$ref"}}
        need = "yes" if name in required else ""
        meaning = child.get("description", "").replace("|", "/")
        if "default" in child:
            meaning += f" Default: `{json.dumps(child['default'])}`."
        out.append(f"| `{path}` | {_type(child, defs)} | {need} | {meaning} |")
    return out


def render() -> str:
    schema = labs._schema()
    defs: dict[str, Any] = schema["$defs"]
    shipped = []
    for name in labs.lab_names():
        lab = labs.load(name)
        shipped.append(f"- `{name}`: {lab['title']} ({lab['filesystem']['type']}, target {lab['target']})")
    families = [
        f"- `{f.filesystem}` ({f.title}): "
        + ", ".join(f"`{r.name}`" + (f" ≥{r.required}" if r.required else "") + f" (phase {r.phase})" for r in f.roles)
        for f in registry.families().values()
    ]
    parts = [HEADER.format(labs="\n".join(shipped), families="\n".join(families)), "| field | type | required | meaning |", "|---|---|---|---|"]
    parts += _rows(schema, defs, "", set(schema.get("required", [])))
    for def_name, node in defs.items():
        if "properties" not in node:
            continue
        parts += ["", f"### {def_name}", ""]
        if node.get("description"):
            parts += [node["description"], ""]
        parts += ["| field | type | required | meaning |", "|---|---|---|---|"]
        parts += _rows(node, defs, "", set(node.get("required", [])))
    return "\n".join(parts) + "\n"
