"""``make test-terraform`` (scripts/check-terraform): every Terraform directory passes fmt,
validate and its tests, offline.

Provider-free modules run ``terraform test``; roots that need a cloud provider are
validated only where the provider can be installed (from the folder PFSLAB_TF_PROVIDERS
names, or a reachable registry), and say so when not. ``terraform init -lockfile=readonly``:
a provider is accepted only as the committed .terraform.lock.hcl pins it (version and
checksum); init may not add or change it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, pfslab_cli, rel, require_cmd, use_tf_cli_config

TOOL = Tool("terraform")
LOCK = ".terraform.lock.hcl"
TREES = ("terraform", "targets")
#: Directories of .tf files that are no root or module of their own (pieces other
#: directories link or copy in).
NOT_CHECKED = re.compile(r"/modules/local-lab/phase$|/envs/common$|/modules/common$")
SOURCE = re.compile(r'^ *source *= *"([^./"][^"]*)"', re.M)


def providers_of(directory: Path) -> str:
    """The providers a directory declares (required_providers sources), comma-separated."""
    found = {m.group(1) for tf in sorted(directory.glob("*.tf")) for m in SOURCE.finditer(tf.read_text())}
    return ",".join(sorted(found))


def providers_unavailable(directory: Path, init_log: str) -> str:
    """Why a directory's providers cannot be installed here, from its ``terraform init`` log
    (empty: they can, or init failed for another reason). A package that does not match
    the lock file is never "unavailable": it is an error."""
    text = " ".join(init_log.split())
    if "doesn't match any of the checksums" in text:
        return ""
    if "was not found in any of the search locations" in text:
        return (f"its providers ({providers_of(directory)}) are not in "
                f"PFSLAB_TF_PROVIDERS={os.environ.get('PFSLAB_TF_PROVIDERS', '')}")
    if "Failed to query available provider packages" in text or "could not connect to registry" in text:
        return (f"its providers ({providers_of(directory)}) cannot be installed: no registry access and no "
                "PFSLAB_TF_PROVIDERS folder holding them")
    return ""


def directories(root: Path) -> list[Path]:
    """Every directory of .tf files under terraform/ and targets/ that is a root or module."""
    found = {tf.parent for tree in TREES for tf in (root / tree).rglob("*.tf") if "/.terraform/" not in str(tf)}
    return sorted((d for d in found if not NOT_CHECKED.search(str(d))), key=str)


def terraform(directory: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_DATA_DIR": str(data)}
    return subprocess.run(["terraform", f"-chdir={directory}", *args], env=env, capture_output=True, text=True)


def combined(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def check_dir(directory: Path) -> None:
    """A directory with a committed lock file is held to it (-lockfile=readonly). One
    without (a module: its root's lock file decides what is deployed; a root whose providers
    no one could lock yet) lets init write one, removed when done: only a lock file someone
    committed counts."""
    committed = (directory / LOCK).is_file()
    data = Path(tempfile.mkdtemp())
    try:
        check_initialized(directory, data, committed)
    finally:
        if not committed:
            (directory / LOCK).unlink(missing_ok=True)
        shutil.rmtree(data, ignore_errors=True)


def check_initialized(directory: Path, data: Path, committed: bool) -> None:
    name = rel(directory)
    init = terraform(directory, data, "init", "-backend=false", "-input=false",
                     *(["-lockfile=readonly"] if committed else []), "-no-color")
    if init.returncode != 0:
        why = providers_unavailable(directory, combined(init))
        if why:
            TOOL.log(f"SKIP {name}: {why}; fmt checked only")
            return
        sys.stderr.write(combined(init))
        raise Refusal(f"terraform init failed in {name} (with a committed lock file: -lockfile=readonly, a provider "
                      f"that does not match {name}/{LOCK} is refused)")
    validate = terraform(directory, data, "validate", "-no-color")
    if validate.returncode != 0:
        sys.stderr.write(combined(validate))
        raise Refusal(f"terraform validate failed in {name}")
    if list(directory.glob("tests/*.tftest.hcl")):
        test = terraform(directory, data, "test", "-no-color")
        if test.returncode != 0:
            sys.stderr.write(combined(test))
            raise Refusal(f"terraform test failed in {name}")
        summary = [line for line in combined(test).splitlines() if line.startswith("Success!") or "passed" in line]
        TOOL.log(f"ok {name}: {summary[-1] if summary else ''}")
    elif committed and providers_of(directory):
        checksums = sum(1 for line in (directory / LOCK).read_text().splitlines() if '"h1:' in line or '"zh:' in line)
        TOOL.log(f"ok {name}: valid, {providers_of(directory)} as {name}/{LOCK} pins them ({checksums} checksums)")
    else:
        TOOL.log(f"ok {name}: valid (no tests)")


def body(argv: list[str]) -> int:
    del argv  # scripts/check-terraform takes none
    root = KIT_ROOT
    require_cmd("terraform")
    os.environ["TF_IN_AUTOMATION"] = "1"
    use_tf_cli_config()
    if os.environ.get("PFSLAB_TF_PROVIDERS"):
        TOOL.log(f"providers from PFSLAB_TF_PROVIDERS={os.environ['PFSLAB_TF_PROVIDERS']} only")
    else:
        TOOL.log("PFSLAB_TF_PROVIDERS is not set: providers only from the registry, if it can be reached")
    # The tests plan labs as the kit resolves them (extends, defaults, layout).
    exported = root / "build" / "terraform-test"
    shutil.rmtree(exported, ignore_errors=True)
    rc = subprocess.run([str(pfslab_cli()), "lab", "export", str(exported)], stdout=subprocess.DEVNULL).returncode
    if rc != 0:
        return rc
    # The shared Terraform (terraform/) and each target's root and module (targets/<t>/).
    for tree in TREES:
        if subprocess.run(["terraform", "fmt", "-check", "-recursive", "-diff", str(root / tree)]).returncode != 0:
            raise Refusal(f"terraform fmt: the files above need 'terraform fmt -recursive {tree}'")
    for directory in directories(root):
        check_dir(directory)
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
