"""The IO500 config file (.ini) of a workload, rendered from the lab.

Full mode follows the list's rules (io500-sc25 and later, src/phase_dbg.c, src/main.c,
src/phase_mdtest_hard.c): ``stonewall-time`` 300, every standard phase run, none of
the settings IO500 marks "INVALIDATES RUN" (``files-per-dir``, ``pause-dir``), no
``scc`` rules. What the rules leave to the submitter (ior-easy's transfer and block
size, the file counts that bound mdtest, ior-hard's segment count) comes from the
workload's ``sizes``, else IO500's own defaults. Quick mode shortens the stonewall
(``sizes.stonewall``) and bounds the sizes so a small lab is not filled; IO500 then
marks the run INVALID for the short stonewall, and the kit shows it as not list-valid.

The data directory is the case's scratch directory in the file system, the result
directory is in the job's directory (kept with the run); neither gets IO500's
timestamp suffix, as each case already has its own.
"""

from __future__ import annotations

from typing import Any

from pfslab.errors import KitError

#: The list's stonewall (seconds); full mode allows no other.
LIST_STONEWALL = 300
#: Config name in the job's directory, and IO500's result directory beside it.
CONFIG_FILE = "io500.ini"
RESULT_DIR = "io500-results"

#: Workload size key -> (ini section, ini key). Only what the rules let a submitter set.
SIZE_KEYS: dict[str, tuple[str, str]] = {
    "ior_easy_transfer": ("ior-easy", "transferSize"),
    "ior_easy_block": ("ior-easy", "blockSize"),
    "mdtest_easy_files": ("mdtest-easy", "n"),
    "ior_hard_segments": ("ior-hard", "segmentCount"),
    "mdtest_hard_files": ("mdtest-hard", "n"),
}
ALLOWED_SIZES: tuple[str, ...] = ("stonewall", *SIZE_KEYS)


class ConfigError(KitError, ValueError):
    """A workload's IO500 settings break the rules of its mode; the message says which."""


def stonewall(sizes: dict[str, Any], mode: str, workload_id: str) -> int:
    """The stonewall of a run: the list's in full mode, the workload's quick one in quick mode."""
    raw = sizes.get("stonewall", LIST_STONEWALL)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"workload {workload_id}: stonewall {raw!r} is not a number of seconds") from None
    if mode == "full" and value != LIST_STONEWALL:
        raise ConfigError(f"workload {workload_id}: stonewall {value} in full mode; the IO500 list's rules "
                          f"allow only {LIST_STONEWALL} (quick mode may shorten it)")
    if value < 1:
        raise ConfigError(f"workload {workload_id}: stonewall {value}; allowed: 1 to {LIST_STONEWALL} seconds")
    return value


def list_valid(sizes: dict[str, Any], mode: str) -> bool:
    """Can a run of these settings enter the list? Only with the list's stonewall."""
    return mode == "full" or int(sizes.get("stonewall", LIST_STONEWALL)) == LIST_STONEWALL


def render(sizes: dict[str, Any], mode: str, workload_id: str, datadir: str, resultdir: str) -> str:
    """The .ini text of one run."""
    unknown = sorted(set(sizes) - set(ALLOWED_SIZES))
    if unknown:
        raise ConfigError(f"workload {workload_id}: unknown IO500 size {unknown[0]!r}; allowed: {', '.join(ALLOWED_SIZES)}")
    wall = stonewall(sizes, mode, workload_id)
    sections: dict[str, dict[str, str]] = {
        "global": {
            "datadir": datadir,
            "timestamp-datadir": "FALSE",
            "resultdir": resultdir,
            "timestamp-resultdir": "FALSE",
            "api": "POSIX",
            # The kit drops caches itself where the lab says so; IO500's sudo command is not assumed.
            "drop-caches": "FALSE",
            "verbosity": "1",
        },
        "debug": {"stonewall-time": str(wall)},
    }
    for key, (section, ini_key) in SIZE_KEYS.items():
        if key in sizes:
            sections.setdefault(section, {})[ini_key] = str(sizes[key])
    valid = "list-valid (the IO500 list's rules)" if list_valid(sizes, mode) else (
        f"NOT list-valid: stonewall {wall} s instead of the list's {LIST_STONEWALL} s, so IO500 marks the run INVALID")
    lines = [f"# pfslab: workload {workload_id}, {mode} mode; {valid}",
             "# Every standard phase runs (no 'run = FALSE'); rendered by pfslab/io500.py."]
    for section, pairs in sections.items():
        lines.append(f"\n[{section}]")
        lines.extend(f"{key} = {value}" for key, value in pairs.items())
    return "\n".join(lines) + "\n"


#: Phases whose runtime IO500 holds against the stonewall (``verify_stonewall``).
STONEWALLED_PHASES: tuple[str, ...] = ("ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write")


def judge_run(details: dict[str, Any], mode: str, wall: int) -> str | None:
    """Why a parsed run (the io500 parser's ``details``) cannot stand, or None.

    The parser already refuses broken runs; here what it cannot know: the stonewall
    the kit gave (each write phase ran at least that long) and the mode (full mode
    needs a list-valid run)."""
    for phase in STONEWALLED_PHASES:
        seconds = float(details["phases"][phase]["seconds"])
        if seconds < wall:
            return f"stonewall not honoured: {phase} ran {seconds:g} s, under the {wall} s stonewall"
    if mode == "full" and not details["list_valid"]:
        reasons = "; ".join(details["invalid_reasons"]) or "a phase or the score marked [INVALID]"
        return f"full mode needs a list-valid run; IO500 marked it INVALID: {reasons}"
    return None


def summary(details: dict[str, Any], mode: str, wall: int) -> dict[str, Any]:
    """What a report shows of one run, in IO500's terms (kept with the test's result)."""
    return {
        "mode": mode,
        "stonewall": wall,
        "list_valid": bool(details["list_valid"]),
        "invalid_reasons": list(details["invalid_reasons"]),
        "phases": details["phases"],
        "score": details["score"],
    }
