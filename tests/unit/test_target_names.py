"""No code outside the target adapters decides by a target's name (issue 22).

What differs between targets is a property of the target's file
(targets/<target>/target.json: remote, provisions, namespaces, ...) or lives in its
folder (targets/<target>/: adapter, Terraform root and module, Python module such as
targets/aws/cloud.py or targets/site/checks.py; not scanned). This scans the kit's code
that runs on the kit's machine (every file of pfslab/, scripts/, terraform/ and the
Makefile) for a comparison with a target's name and names every file and line that has
one. Tests (tests/, terraform/**/tests/) may compare names: they check what a target
produces.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]


def target_names() -> list[str]:
    return sorted(json.loads(p.read_text())["target"] for p in (KIT / "targets").glob("*/target.json"))


def _is_adapter(path: Path) -> bool:
    return path.relative_to(KIT).parts[0] == "targets"


def scanned_files(names: list[str]) -> list[Path]:
    found = [KIT / "Makefile"]
    found += (KIT / "pfslab").rglob("*.py")
    found += [p for p in (KIT / "scripts").rglob("*") if p.is_file() and p.suffix in ("", ".sh")]
    found += [p for p in (KIT / "terraform").rglob("*.tf") if "tests" not in p.relative_to(KIT).parts]
    return sorted(p for p in found if not _is_adapter(p))


def comparison_patterns(names: list[str]) -> list[re.Pattern[str]]:
    """A name compared with ==, != or =~ (either side, quoted or not), listed in a
    Python or HCL collection that is tested for membership, or a shell/Python case arm."""
    name = "(?:" + "|".join(map(re.escape, names)) + ")"
    quoted = f"[\"']{name}[\"']"
    return [
        # Not followed by a dot: HCL's `local.` is a namespace, not the target local.
        re.compile(rf"(?:==|!=|=~)\s*[\"']?{name}[\"']?(?![\w.-])"),
        re.compile(rf"{quoted}\s*(?:==|!=)"),
        re.compile(rf"\bin\s*[(\[{{][^\n]*{quoted}"),
        re.compile(rf"contains\(\s*\[[^\]]*\"{name}\""),
        re.compile(rf"^\s*\(?{name}(?:\s*\|\s*[\w*-]+)*\s*\)"),   # shell: aws) or aws | azure)
        re.compile(rf"\|\s*{name}\s*\)"),                         # shell: qemu | aws)
        re.compile(rf"^\s*case\s+{quoted}\s*:"),                  # python match
    ]


def comparisons() -> list[str]:
    names = target_names()
    patterns = comparison_patterns(names)
    found = []
    for path in scanned_files(names):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if line.lstrip().startswith("#"):
                continue  # a comment may name a target: it explains, it decides nothing
            if any(p.search(line) for p in patterns):
                found.append(f"{path.relative_to(KIT)}:{number}: {line.strip()}")
    return found


def test_the_patterns_find_each_kind_of_comparison() -> None:
    patterns = comparison_patterns(["local", "aws", "baremetal"])
    compared = [
        'if lab.get("target", "local") == "local":',
        "  [[ $target == local ]] || REMOTE=1",
        '[[ $(pfslab lab get "$lab" target) != local ]] ||',
        '  ipoib = x && local.target == "aws" ? 1 : 0',
        'if target in ("aws", "azure"):',
        "    aws) source=amazon-ebs.debian ;;",
        "    qemu | aws) ;;",
        '    case "baremetal":',
    ]
    missed = [line for line in compared if not any(p.search(line) for p in patterns)]
    assert missed == []
    fine = ['settings = lab["targets"]["local"]', "local.target_info.namespaces ? 1 : 0",
            "  local name=$1", 'bridge=$(lab_field "$lab" targets.local.bridge)',
            "x != local.hw_efa[g]"]
    assert [line for line in fine if any(p.search(line) for p in patterns)] == []


def test_every_python_file_of_the_package_is_scanned() -> None:
    # A target's module lives in its folder; none stays in pfslab/ exempt from the scan.
    scanned = scanned_files(target_names())
    assert [p for p in sorted((KIT / "pfslab").rglob("*.py")) if p not in scanned] == []


def test_no_code_outside_the_adapters_compares_a_target_name() -> None:
    found = comparisons()
    assert found == [], "a target's name is compared (use a flag of targets/<t>/target.json or its folder):\n" + "\n".join(found)


def family_names() -> list[str]:
    """Each family's file-system type and family name (families/<fs>/family.json)."""
    docs = [json.loads(p.read_text()) for p in (KIT / "families").glob("*/family.json")]
    return sorted({d["filesystem"] for d in docs} | {d["family"] for d in docs})


def test_no_code_outside_the_family_folders_compares_a_family_name() -> None:
    # What differs between file systems is data of families/<fs>/family.json or its role
    # script (not scanned: scripts/roles/<family> are links into families/ on nodes).
    names = family_names()
    patterns = comparison_patterns(names)
    found = []
    for path in scanned_files(names):
        if "roles" in path.relative_to(KIT).parts:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(KIT)}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), start=1)
                  if not line.lstrip().startswith("#") and any(p.search(line) for p in patterns)]
    assert "beegfs" in names and "ceph" in names
    assert found == [], "a family's name is compared (use families/<fs>/family.json):\n" + "\n".join(found)
