"""Whether an IOR release accepts an IOR or mdtest command line, and BeeGFS striping in
the syntax of the IOR that runs it.

The data is spack/ior-options.json: per IOR release the toolchain builds (3.3.0 in the
seed view, 4.0.0 in the default view), the short and long options of ior and mdtest,
ior's ``-O`` directives and the backends' module options (``--posix.odirect`` ...),
derived from IOR's source at the release tag (the file names repo, tag, commit and
files). An option an ``#ifdef`` puts around needs that build feature (``beegfs``: the
BeeGFS toolchain profile builds ``ior +beegfs`` on BeeGFS clients, spack/README.md).

What is checked, per token, as IOR's option parser (src/option.c) reads it:
- ``-x``: a short option of the tool; one that takes a value takes the rest of the
  token (``-t2M``) or the next token;
- ``--name[=value]``: a long option of the tool or a module option of a built backend,
  with its feature;
- ``-O a=1,b=2`` (ior): each name is a directive of that release (case-insensitive),
  built with its feature, or else, as DecodeDirective falls through to the option
  parser, a long or module option written with its dashes (``-O --posix.odirect=1``);
  3.3.0's ``beegfsNumTargets`` is not one of 4.0.0's: "Unrecognized parameter";
- any other token: IOR stops (no positional arguments).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePath
from typing import Any

from pfslab import KIT_ROOT

DATA = KIT_ROOT / "spack" / "ior-options.json"
TOOLS = ("ior", "mdtest")


@dataclass(frozen=True)
class Ior:
    """One IOR release's option tables, built with ``features`` (e.g. beegfs)."""

    version: str
    tables: dict[str, Any]
    features: frozenset[str] = field(default_factory=frozenset)

    def built(self, entry: dict[str, Any]) -> bool:
        return all(f in self.features for f in entry.get("needs", []))

    def option(self, tool: str, kind: str, name: str) -> dict[str, Any] | None:
        """The table entry of a short (kind 'short') or long option (a module option counts
        as long), or None when this release does not have it."""
        entry: dict[str, Any] | None = self.tables[tool][kind].get(name)
        if entry is None and kind == "long":
            entry = self.tables["modules"].get(name)
        return entry

    def directive(self, name: str) -> dict[str, Any] | None:
        for known, entry in self.tables["ior"]["directives"].items():
            if known.lower() == name.lower():
                found: dict[str, Any] = entry
                return found
        return None


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def versions() -> list[str]:
    """The IOR releases the data file describes."""
    return sorted(_data()["versions"])


def load(version: str, features: frozenset[str] = frozenset()) -> Ior:
    entry = _data()["versions"].get(version)
    if entry is None:
        raise KeyError(f"spack/ior-options.json has no IOR {version} (it has: {', '.join(versions())})")
    return Ior(version, entry, frozenset(features))


def features_of(lab: dict[str, Any]) -> frozenset[str]:
    """Build features of the lab's IOR: the `+<feature>` variants its family's toolchain
    profile requires of ior (families/<fs>/family.json: BeeGFS's builds ior +beegfs); no
    profile builds Lustre, GPFS or GPU support."""
    from pfslab import registry

    fs_type = lab.get("filesystem", {}).get("type")
    family = registry.families().get(fs_type) if fs_type else None
    if family is None:
        return frozenset()
    return frozenset(v[1:] for v in family.variants_of("ior") if v.startswith("+"))


def for_lab(lab: dict[str, Any]) -> Ior:
    """The IOR the lab runs: its view's release (pfslab/toolchain.py), with its features."""
    from pfslab import toolchain

    return load(toolchain.tool_version(lab, "ior"), features_of(lab))


# ---- checking ------------------------------------------------------------------------

def _why_missing(ior: Ior, what: str, entry: dict[str, Any] | None) -> str | None:
    if entry is None:
        return f"IOR {ior.version} has no option {what}"
    if not ior.built(entry):
        needs = ",".join(entry.get("needs", []))
        return f"{what} of IOR {ior.version} needs a build with {needs} support, which this lab's IOR is not"
    return None


def _check_directives(ior: Ior, text: str) -> list[str]:
    problems = []
    for item in text.split(","):
        name, _, _value = item.partition("=")
        name = name.strip()
        entry = ior.directive(name)
        if entry is not None:
            why = _why_missing(ior, f"-O {name}", entry)
        elif name.startswith("--"):
            why = _why_missing(ior, f"-O {name}", ior.option("ior", "long", name[2:]))
        else:
            why = (f"-O {name}: IOR {ior.version} has no directive {name!r} "
                   f"(it stops: Unrecognized parameter \"{name}\")")
        if why:
            problems.append(why)
    return problems


def check_args(ior: Ior, tool: str, args: list[str]) -> list[str]:
    """Problems with the arguments of one ``ior`` or ``mdtest`` run (after the program)."""
    if tool not in TOOLS:
        raise ValueError(f"{tool!r} is not one of {', '.join(TOOLS)}")
    problems: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token.startswith("--"):
            name, eq, _ = token[2:].partition("=")
            entry = ior.option(tool, "long", name)
            why = _why_missing(ior, f"--{name} ({tool})", entry)
            if why:
                problems.append(why)
            elif entry is not None and entry["takes"] == "value" and not eq:
                i += 1
            continue
        if not token.startswith("-") or token == "-":
            problems.append(f"{tool} of IOR {ior.version} takes no argument {token!r} (every argument is an option)")
            continue
        letter, rest = token[1], token[2:]
        entry = ior.option(tool, "short", letter)
        why = _why_missing(ior, f"-{letter} ({tool})", entry)
        if why:
            problems.append(why)
            continue
        assert entry is not None
        if entry["takes"] == "value":
            value = rest.removeprefix("=") if rest else (args[i] if i < len(args) else None)
            if not rest:
                i += 1
            if value is None:
                problems.append(f"-{letter} ({tool}) needs a value")
            elif tool == "ior" and letter == "O":
                problems.extend(_check_directives(ior, value))
        elif rest:
            # Grouped flags (-vv, -wr): each must be a flag of the tool.
            for extra in rest:
                more = ior.option(tool, "short", extra)
                why = _why_missing(ior, f"-{extra} ({tool}, in {token})", more)
                if why or (more is not None and more["takes"] != "none"):
                    problems.append(why or f"-{extra} ({tool}) takes a value; it cannot be grouped in {token}")
    return problems


def check_command(ior: Ior, tokens: list[str], program: str) -> list[str]:
    """Problems with a job step's command (tokens from shlex): the arguments after the
    ior or mdtest program, wherever it is (after mpirun's options)."""
    for index, token in enumerate(tokens):
        if PurePath(token).name == program:
            return check_args(ior, program, tokens[index + 1:])
    return [f"no {program} program in {' '.join(tokens)}"]


# ---- BeeGFS striping -----------------------------------------------------------------

def beegfs_striping(ior: Ior, targets: str, chunk: str) -> str:
    """The options that stripe IOR's file over ``targets`` BeeGFS targets in chunks of
    ``chunk``, in the syntax this release reads: 3.3.0's ``-O beegfsNumTargets=..``
    directives, or 4.0.0's POSIX module options (which no longer come through -O)."""
    if ior.directive("beegfsNumTargets") is not None and ior.directive("beegfsChunkSize") is not None:
        return f"-O beegfsNumTargets={targets},beegfsChunkSize={chunk}"
    if ior.option("ior", "long", "posix.beegfs.NumTargets") and ior.option("ior", "long", "posix.beegfs.ChunkSize"):
        return f"--posix.beegfs.NumTargets={targets} --posix.beegfs.ChunkSize={chunk}"
    raise KeyError(f"IOR {ior.version} has no BeeGFS striping options (spack/ior-options.json)")

