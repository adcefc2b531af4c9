"""Compare two folders of rendered artefacts (``python3 -m pfslab.dev.artefacts render``)
after normalising what differs between any two renderings of the same code.

What is normalised, and nothing else (each rule can hide a real difference, so each is
one that two renderings of one commit were seen to need):

- the rendered checkout's path and the output folder's path, as the folder's
  ``manifest.json`` records them (as given and resolved) -> ``<CHECKOUT>``, ``<OUT>``;
- UTC times: run-directory names ``20261128T070051Z`` (with the ``+``\\ s a second run
  in the same second gets) and RFC 3339 times ``2026-11-28T07:00:51Z`` -> ``<TIME>``
  (a run's directory, the expiry tag of a lab's cloud resources);
- run and session ids (UUIDs) -> ``<UUID>``;
- random suffixes: ``mktemp``'s ``tmp.XXXXXXXXXX`` -> ``tmp.<RAND>``, and a job's scratch
  folder ``<workload>-t<threads>-<8 hex digits>`` (pfslab/rfm.py draws the digits from a
  UUID per run) -> ``<workload>-t<threads>-<RAND>``;
- in ReFrame's ``.rfm_testcase.json``, the order of ``tags`` (ReFrame keeps them in a
  set, so their order changes from one run to the next).

A dry run's case is found by its ReFrame description (``descr`` in its
``.rfm_testcase.json``: tool, workload, lab, threads, mode), not by its stage folder,
whose name ReFrame makes from the test's class and parameters (a renamed class renames
every folder): its files are listed as ``dry-run/<lab>/[<descr>]/<file>``, and the case
folder's name inside them reads ``<CASE>``. A case without a description, or with one
another case of the lab has, keeps its folder.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: Written beside the artefacts by the renderer; read here for the paths to normalise,
#: never compared itself.
MANIFEST = "manifest.json"

PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{8}T\d{6}Z\+*"), "<TIME>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"), "<TIME>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<UUID>"),
    (re.compile(r"\btmp\.[A-Za-z0-9]{10}\b"), "tmp.<RAND>"),
    (re.compile(r"\b([a-z0-9][a-z0-9-]*-t\d+)-[0-9a-f]{8}\b"), r"\1-<RAND>"),
)


@dataclass(frozen=True)
class Normaliser:
    """Turns a rendered file's text into what two renderings of one commit share."""

    #: (literal, placeholder); longer literals are replaced first, so a path inside
    #: another (the output folder inside the checkout) keeps its own placeholder.
    literals: tuple[tuple[str, str], ...] = ()

    @classmethod
    def for_folder(cls, folder: Path) -> Normaliser:
        """The paths the folder's manifest names: its checkout and itself."""
        manifest = folder / MANIFEST
        data = json.loads(manifest.read_text()) if manifest.is_file() else {}
        pairs: list[tuple[str, str]] = []
        for key, placeholder in (("checkout", "<CHECKOUT>"), ("out", "<OUT>")):
            for variant in (data.get(key), data.get(f"{key}_resolved")):
                if isinstance(variant, str) and variant not in ("", "/"):
                    pairs.append((variant.rstrip("/"), placeholder))
        return cls(tuple(sorted(set(pairs), key=lambda p: -len(p[0]))))

    def text(self, name: str, content: str, case: str = "") -> str:
        if name == ".rfm_testcase.json":
            content = _sorted_tags(content)
        for literal, placeholder in self.literals:
            content = content.replace(literal, placeholder)
        if case:
            content = re.sub(rf"/{re.escape(case)}\b", "/<CASE>", content)
        for pattern, placeholder in PATTERNS:
            content = pattern.sub(placeholder, content)
        return content


def _sorted_tags(content: str) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        return content  # compared as it is; a broken file is a difference worth seeing
    if isinstance(data, dict) and isinstance(data.get("tags"), list):
        data["tags"] = sorted(data["tags"], key=str)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


@dataclass
class Comparison:
    raw_identical: list[str] = field(default_factory=list)
    normalised_identical: list[str] = field(default_factory=list)
    differing: dict[str, str] = field(default_factory=dict)  # relative path -> unified diff
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)

    @property
    def compared(self) -> int:
        return len(self.raw_identical) + len(self.normalised_identical) + len(self.differing)

    @property
    def identical(self) -> int:
        return len(self.raw_identical) + len(self.normalised_identical)

    @property
    def clean(self) -> bool:
        return not (self.differing or self.only_old or self.only_new)

    def summary(self) -> str:
        return (f"{self.compared} files compared: {self.identical} identical "
                f"({len(self.raw_identical)} byte for byte, {len(self.normalised_identical)} after normalising), "
                f"{len(self.differing)} differing; {len(self.only_old)} only in old, {len(self.only_new)} only in new")

    def by_part(self) -> dict[str, Counter[str]]:
        """Per top folder (dry-run, user-data, plans): how many of each outcome."""
        parts: dict[str, Counter[str]] = {}
        for outcome, paths in (("identical", self.raw_identical + self.normalised_identical),
                               ("differing", list(self.differing)), ("only old", self.only_old),
                               ("only new", self.only_new)):
            for path in paths:
                parts.setdefault(path.split("/", 1)[0], Counter())[outcome] += 1
        return parts


@dataclass(frozen=True)
class Listed:
    path: str  # relative to the folder
    case: str = ""  # a dry-run case's stage folder name, when the file is listed by its description


def files(folder: Path) -> dict[str, Listed]:
    """The folder's files (its manifest left out) by the name they are compared under."""
    out = {p.relative_to(folder).as_posix(): Listed(p.relative_to(folder).as_posix()) for p in folder.rglob("*")
           if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST}
    cases: dict[str, list[Path]] = {}
    for testcase in folder.glob("dry-run/*/**/.rfm_testcase.json"):
        try:
            descr = json.loads(testcase.read_text()).get("descr")
        except (ValueError, AttributeError):
            continue
        if isinstance(descr, str) and descr:
            lab = testcase.relative_to(folder).parts[1]
            cases.setdefault(f"dry-run/{lab}/[{descr}]", []).append(testcase.parent)
    for key, dirs in cases.items():
        if len(dirs) != 1:
            continue  # one description, two cases: neither can be told by it
        for p in dirs[0].rglob("*"):
            rel = p.relative_to(folder).as_posix()
            if rel in out:
                del out[rel]
                out[f"{key}/{p.relative_to(dirs[0]).as_posix()}"] = Listed(rel, dirs[0].name)
    return out


def compare(old: Path, new: Path, context: int = 3) -> Comparison:
    """Compare every file of the two folders, each side normalised with its own manifest."""
    for folder in (old, new):
        if not folder.is_dir():
            raise ValueError(f"{folder} is not a folder of rendered artefacts")
    norm_old, norm_new = Normaliser.for_folder(old), Normaliser.for_folder(new)
    old_files, new_files = files(old), files(new)
    result = Comparison(only_old=sorted(set(old_files) - set(new_files)),
                        only_new=sorted(set(new_files) - set(old_files)))
    for rel in sorted(set(old_files) & set(new_files)):
        fa, fb = old_files[rel], new_files[rel]
        a, b = (old / fa.path).read_bytes(), (new / fb.path).read_bytes()
        if a == b:
            result.raw_identical.append(rel)
            continue
        name = rel.rsplit("/", 1)[-1]
        ta = norm_old.text(name, a.decode("utf-8", "replace"), fa.case)
        tb = norm_new.text(name, b.decode("utf-8", "replace"), fb.case)
        if ta == tb:
            result.normalised_identical.append(rel)
        else:
            result.differing[rel] = "".join(difflib.unified_diff(
                ta.splitlines(keepends=True), tb.splitlines(keepends=True), f"old/{rel}", f"new/{rel}", n=context))
    return result


def report(result: Comparison, max_lines: int = 200) -> str:
    """The comparison as text: each difference's diff (cut at max_lines lines), the files
    found on one side only, per part and in all."""
    out: list[str] = []
    for rel, diff in result.differing.items():
        lines = diff.splitlines()
        out += lines[:max_lines]
        if len(lines) > max_lines:
            out.append(f"... {len(lines) - max_lines} more diff lines of {rel}")
    out += [f"only in old: {rel}" for rel in result.only_old]
    out += [f"only in new: {rel}" for rel in result.only_new]
    for part, counts in sorted(result.by_part().items()):
        out.append(f"{part}: " + ", ".join(f"{counts[k]} {k}" for k in ("identical", "differing", "only old", "only new")))
    out.append(result.summary())
    return "\n".join(out) + "\n"
