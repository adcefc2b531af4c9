"""Terraform providers are pinned and checked: committed lock files, init held to them.

``targets/aws/root/.terraform.lock.hcl`` pins hashicorp/aws (version and checksums);
``scripts/check-terraform`` (pfslab/dev/check_terraform.py) runs ``terraform init -lockfile=readonly``, so a provider that
does not match the lock is an error, and the lock file is never ignored by git.
"""

from __future__ import annotations

import re
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]

AWS_ROOT = KIT / "targets" / "aws" / "root"


def provider_block(lock: Path, address: str) -> str:
    match = re.search(r'provider "' + re.escape(address) + r'" \{(.*?)\n\}', lock.read_text(encoding="utf-8"), re.S)
    assert match, f"{lock.relative_to(KIT)} pins no {address}"
    return match.group(1)


def test_aws_root_lock_pins_the_provider_with_checksums() -> None:
    lock = AWS_ROOT / ".terraform.lock.hcl"
    assert lock.is_file(), "targets/aws/root/.terraform.lock.hcl is not there (it is committed)"
    block = provider_block(lock, "registry.terraform.io/hashicorp/aws")
    assert re.search(r'^\s*version\s*=\s*"5\.100\.0"$', block, re.M)
    h1 = re.findall(r'"h1:[A-Za-z0-9+/]{43}="', block)
    zh = re.findall(r'"zh:[0-9a-f]{64}"', block)
    # h1: the linux_amd64 package as installed; zh: the release's zip of each platform.
    assert h1 and len(zh) >= 10, f"too few checksums: {len(h1)} h1, {len(zh)} zh"
    constraint = re.search(r'^\s*constraints\s*=\s*"([^"]+)"$', block, re.M)
    versions_tf = (AWS_ROOT / "versions.tf").read_text(encoding="utf-8")
    assert constraint and f'version = "{constraint.group(1)}"' in versions_tf, "lock constraints differ from versions.tf"


def test_lock_files_are_not_ignored_and_terraform_dirs_are() -> None:
    ignored = [line.strip() for line in (KIT / ".gitignore").read_text(encoding="utf-8").splitlines()]
    assert ".terraform.lock.hcl" not in ignored
    assert ".terraform/" in ignored


def test_check_terraform_holds_roots_to_their_lock_file() -> None:
    # scripts/check-terraform runs pfslab/dev/check_terraform.py.
    script = (KIT / "pfslab" / "dev" / "check_terraform.py").read_text(encoding="utf-8")
    common = (KIT / "scripts" / "lib" / "common.sh").read_text(encoding="utf-8")
    assert '"-lockfile=readonly"' in script
    assert "PFSLAB_TF_PROVIDERS" in script and "use_tf_cli_config()" in script
    # A package that does not match the lock is an error, never a skip: in check-terraform's
    # reason (pfslab/dev) and in lab-up's (scripts/lib/common.sh).
    body = script[script.index("def providers_unavailable("):]
    assert 'if "doesn\'t match any of the checksums" in text:\n        return ""' in body.split("\n\n\n")[0]
    body = common[common.index("tf_providers_unavailable() {"):]
    assert "doesn't match any of the checksums\"* ]] && return 0" in body.split("\n}\n")[0]
    assert 'TOOL.log(f"SKIP {name}: {why}; fmt checked only")' in script
