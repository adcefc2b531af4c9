"""Where a lab departs from its source, as its lab file says so: once, beside the value.

A seed lab's file holds the seed's own values; a value the seed does not give, or that
the kit changes, carries a comment saying "kit's choice" and why, on the value's line or
in the comment block right above it (the convention each seed lab's header states). This
module reads those comments back with the field they stand beside, so that a run keeps
them (``provenance.json``) and its report lists them next to the value: the note is
written once, in the lab file, and shown where the results are read.

Comments are not data to a YAML parser, so the file is read line by line: block
mappings and sequences by indentation, flow collections (``{...}``, ``[...]``) that
span lines, and block scalars (``>-``, ``|``) whose lines are text, not comments. A
comment block ends at a blank line; one above the first key is the file's header.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

#: A comment that declares a departure: "kit's choice" (or choices), not quoted (a
#: header that explains the convention quotes it).
MARK = re.compile(r"(?<![\"“'])\bkit['’]s choices?\b", re.IGNORECASE)

#: A mapping key at the start of a line's code: quoted, or plain up to the first ": ".
_KEY = re.compile(r"""^("[^"]*"|'[^']*'|[^\s#"'{}\[\],][^#]*?)\s*:(?:\s|$)""")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*$")


@dataclass(frozen=True)
class Deviation:
    """One declared departure: the field (dotted; list items by their id or name), the
    value as the lab file writes it, the comment, and the lab file it is in."""

    field: str
    value: Any
    note: str
    file: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _split_comment(code: str) -> tuple[str, str | None]:
    """A line's code and its comment (a ``#`` after whitespace, outside quotes)."""
    quote: str | None = None
    for i, char in enumerate(code):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'" and (i == 0 or code[i - 1] in " \t[{,:"):
            quote = char
        elif char == "#" and (i == 0 or code[i - 1] in " \t"):
            return code[:i].rstrip(), code[i + 1:].strip()
    return code.rstrip(), None


def _depth(code: str) -> int:
    """How many flow collections the code opens and leaves open."""
    depth, quote = 0, None
    for char in code:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
    return depth


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def scan(text: str) -> list[tuple[tuple[str | int, ...], str]]:
    """Every kit's-choice comment of a lab file's text, with the path (keys and list
    indices) of the field it stands beside."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    stack: list[tuple[int, str | int, bool]] = []  # (indent, key or index, is a list item)
    next_index: dict[tuple[str | int, ...], int] = {}
    pending: list[str] = []
    seen_key = False
    block_indent: int | None = None
    flow = 0
    current: tuple[str | int, ...] = ()

    def path() -> tuple[str | int, ...]:
        return tuple(seg for _, seg, _ in stack)

    def note(comments: list[str]) -> None:
        text = " ".join(c for c in comments if c)
        if comments and MARK.search(text):
            found.append((current, text))

    for raw in text.splitlines():
        line = raw.rstrip()
        if block_indent is not None:
            if not line.strip() or _indent(line) > block_indent:
                continue
            block_indent = None
        if flow > 0:
            code, comment = _split_comment(line)
            flow += _depth(code)
            note([comment] if comment else [])
            continue
        stripped = line.lstrip(" ")
        if not stripped:
            pending = []
            continue
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        if stripped == "---":
            continue
        if not seen_key:
            seen_key, pending = True, []
        code, comment = _split_comment(line)
        indent = _indent(code)
        rest = code.lstrip(" ")
        while rest == "-" or rest.startswith("- "):
            while stack and (stack[-1][0] > indent or (stack[-1][0] == indent and stack[-1][2])):
                stack.pop()
            parent = path()
            index = next_index.get(parent, 0)
            next_index[parent] = index + 1
            stack.append((indent, index, True))
            after = rest[1:]
            indent += 1 + len(after) - len(after.lstrip(" "))
            rest = after.lstrip(" ")
        key = _KEY.match(rest)
        if key:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            name = key.group(1).strip()
            if name[:1] in "\"'" and name[-1:] == name[:1]:
                name = name[1:-1]
            stack.append((indent, name, False))
            value = rest[key.end():].strip()
            if _BLOCK_SCALAR.match(value):
                block_indent = indent
        else:
            value = rest
        current = path()
        flow = max(0, _depth(value))
        note(pending + ([comment] if comment else []))
        pending = []
    return found


def _walk(data: Any, path: tuple[str | int, ...]) -> tuple[str, Any]:
    """The display name of a path (list items by id or name) and the value there."""
    parts: list[str] = []
    node = data
    for seg in path:
        if isinstance(seg, int):
            item = node[seg] if isinstance(node, list) and seg < len(node) else None
            label = item.get("id", item.get("name")) if isinstance(item, dict) else None
            parts.append(f"[{label if label is not None else seg}]")
            node = item
        else:
            parts.append(("." if parts else "") + seg)
            node = node.get(seg) if isinstance(node, dict) else None
    return "".join(parts), node


def from_text(text: str, file: str = "") -> list[Deviation]:
    """The deviations a lab file's text declares, in file order."""
    data = yaml.safe_load(text) or {}
    out = []
    for path, comment in scan(text):
        field, value = _walk(data, path)
        out.append(Deviation(field or "(lab)", value, comment, file))
    return out


def for_file(path: Path, labs_dir: Path | None = None) -> list[Deviation]:
    """The deviations of a lab file and of the labs it ``extends`` (a base's note on a
    field the file sets again is the base's, not this lab's, and is left out)."""
    from pfslab import labs

    text = path.read_text()
    own = from_text(text, path.name)
    data = yaml.safe_load(text) or {}
    base = data.get("extends") if isinstance(data, dict) else None
    if not isinstance(base, str):
        return own
    base_path = next((d / f"{base}.yaml" for d in (path.parent, labs_dir or labs.LABS_DIR) if (d / f"{base}.yaml").is_file()), None)
    if base_path is None:
        return own
    inherited = [d for d in for_file(base_path, labs_dir) if not _sets(data, d.field)]
    return inherited + own


def _sets(data: dict[str, Any], field: str) -> bool:
    """Whether a lab file sets ``field`` itself (mappings merge, so only the keys it
    writes count; a list it writes replaces the base's wholly)."""
    node: Any = data
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", field):
        if part.startswith("["):
            return True  # the file writes the list: the base's items are gone
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def stated(lab: dict[str, Any]) -> list[Deviation]:
    """Departures a lab states as data, not as comments: a workload step's ``seed_args``
    (the source's arguments, kept beside the ones that run) with its ``deviation``, and
    every tool version the lab's source ran that its toolchain view does not
    (pfslab/toolchain.py)."""
    from pfslab import toolchain

    out = []
    for workload in lab.get("workloads", []):
        for index, step in enumerate(workload.get("steps", [])):
            if isinstance(step, dict) and "seed_args" in step:
                out.append(Deviation(f"workloads[{workload['id']}].steps[{index}].args", step["args"],
                                     f"{step['deviation']} (the source's: {step['seed_args']})", _workloads_file(lab["name"])))
    return out + toolchain.deviations(lab)


def _workloads_file(name: str) -> str:
    """The lab file that writes a lab's workloads: its own, or that of the lab it
    reproduces or extends (labs.resolve takes them from there)."""
    from pfslab import labs

    path = labs.lab_path(name)
    data = yaml.safe_load(path.read_text()) or {}
    for key in ("reproduces", "extends"):
        if "workloads" not in data and isinstance(data.get(key), str):
            return _workloads_file(data[key])
    return path.name
