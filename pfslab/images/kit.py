"""What an image carries of the kit (under /opt/pfslab), its digest and its archive.

The digest tags every image (pfslab-<role>-<family>-<digest12>), so the file list, the
manifest's bytes and its hash must stay what scripts/lib/images.sh made them: paths
sorted byte-wise, "<sha256>  <mode>  <path>" lines, sha256 of those lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pfslab.images import ImageError
from pfslab.spackstep.step import sha256_file

#: What an image carries of the kit: nothing from build/ or .venv.
KIT_PATHS = ("scripts", "families", "labs", "registry", "targets", "pfslab", "reframe", "spack",
             "pyproject.toml", "requirements.txt", "requirements.lock", "requirements-build.txt")

#: Caches left out when the kit is not a git checkout (in one, .gitignore does it).
_CACHES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".spack-env"})

#: A target's Terraform root and module run on the kit's machine only (and link shared
#: files under terraform/, which nodes do not get), and its image.pkr.hcl is Packer's,
#: as packer/ is: nodes carry its target.json. Its Python module stays although nodes
#: never run it: the registry, which nodes read to load a lab, refuses a target.json
#: whose python file is missing.
_NOT_FOR_NODES = re.compile(r"^targets/[^/]+/(root/|module/|image\.pkr\.hcl$)")

_FAMILY_ROLE = re.compile(r"^families/([^/]+)/role$")


def _is_git_checkout(root: Path) -> bool:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        return False
    return done.returncode == 0


def _walk(root: Path, top: str) -> list[str]:
    """``find TOP`` without following links (a linked TOP is itself one entry), caches
    pruned by name, files and links kept but ``*.pyc``."""
    found: list[str] = []

    def visit(rel: str) -> None:
        path = root / rel
        name = os.path.basename(rel)
        if name in _CACHES:
            return
        if path.is_symlink() or not path.is_dir():
            if (path.is_symlink() or path.is_file()) and not name.endswith(".pyc"):
                found.append(rel)
            return
        for entry in os.scandir(path):
            visit(f"{rel}/{entry.name}")

    visit(top)
    return found


def _listed(root: Path, paths: list[str]) -> list[str]:
    if _is_git_checkout(root):
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--", *paths], stdout=subprocess.PIPE, check=True)
        return [p for p in os.fsdecode(done.stdout).split("\0") if p]
    return [f for top in paths for f in _walk(root, top)]


def image_files(root: Path) -> list[str]:
    """The kit files an image carries, relative to ``root``, sorted byte-wise. In a git
    checkout: tracked and untracked files that .gitignore does not exclude; elsewhere the
    same paths found on disk, less the caches. Deleted files git still lists are left out;
    a link counts when it points at a file."""
    paths = [p for p in KIT_PATHS if (root / p).exists()]
    if not paths:
        raise ImageError(f"no kit files under {root} (looked for {' '.join(KIT_PATHS)})")
    files = [f for f in _listed(root, paths) if (root / f).is_file()]
    files.sort(key=os.fsencode)
    return [f for f in files if not _NOT_FOR_NODES.match(f)]


def _family_of(root: Path, folder: str) -> str:
    try:
        data = json.loads((root / "families" / folder / "family.json").read_text())
    except (OSError, ValueError):
        raise ImageError(f"families/{folder}/family.json: cannot read its family") from None
    if not isinstance(data, dict):
        raise ImageError(f"families/{folder}/family.json: cannot read its family")
    family = data.get("family")
    # What ``jq -r .family`` printed: a string bare, anything else as JSON.
    return family if isinstance(family, str) else json.dumps(family)


def image_entries(root: Path) -> list[tuple[str, str]]:
    """(SOURCE, PATH) per file of the image, sorted by PATH: PATH where the image has it,
    SOURCE the kit file it is. Nodes run a family's role script as
    scripts/roles/<family>, beside the kit's own roles (the path first boot, the images'
    install step and every SSH call name, whichever folder the family lives in), so the
    image carries families/<fs>/role there too."""
    entries: list[tuple[str, str]] = []
    for f in image_files(root):
        entries.append((f, f))
        matched = _FAMILY_ROLE.match(f)
        if matched:
            entries.append((f, f"scripts/roles/{_family_of(root, matched.group(1))}"))
    # sort -t TAB -k2,2 in the C locale: by PATH, then the whole line.
    entries.sort(key=lambda e: (os.fsencode(e[1]), os.fsencode(f"{e[0]}\t{e[1]}")))
    return entries


def image_manifest(root: Path) -> str:
    """"<sha256>  <mode>  <path>" per file, newline-terminated: the contents, the
    executable bit (755/644, whatever the umask) and the path. The digest is taken over it."""
    lines = []
    for src, path in image_entries(root):
        mode = 755 if os.access(root / src, os.X_OK) else 644
        lines.append(f"{sha256_file(root / src)}  {mode}  {path}\n")
    return "".join(lines)


def digest_of(manifest: str) -> str:
    """The digest of a manifest: sha256 of its lines with one final newline (as the
    shell's ``sha256sum <<<"$manifest"`` hashed it)."""
    return hashlib.sha256((manifest.rstrip("\n") + "\n").encode()).hexdigest()


def image_digest(root: Path) -> str:
    return digest_of(image_manifest(root))


_TAR_OWNER = ["--owner=0", "--group=0", "--numeric-owner"]
_TAR_MODE = "--mode=u+rw,go+r,go-w"


def kit_archive(root: Path, out: Path) -> None:
    """A gzip'd tar of exactly the files the digest covers (owner root, modes 755/644),
    with the manifest as .pfslab-manifest, written to ``out`` (whole or not at all).
    GNU tar and gzip -n make it, as they always have: the archive's bytes stay theirs."""
    for tool in ("tar", "gzip"):
        if shutil.which(tool) is None:
            raise ImageError(f"missing command '{tool}'; run 'make deps' first")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        listing = tmp / "list"
        listing.write_bytes(b"".join(os.fsencode(f) + b"\n" for f in image_files(root)))
        (tmp / ".pfslab-manifest").write_text(image_manifest(root))
        kit_tar = str(tmp / "kit.tar")
        subprocess.run(["tar", "-C", str(root), *_TAR_OWNER, _TAR_MODE, "-cf", kit_tar,
                        "--verbatim-files-from", "-T", str(listing)], check=True)
        # The role scripts' node copies (image_entries), staged at their image paths.
        copies = [(src, path) for src, path in image_entries(root) if src != path]
        if copies:
            for src, path in copies:
                (tmp / "copies" / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / src, tmp / "copies" / path)
            listing.write_bytes(b"".join(os.fsencode(path) + b"\n" for _, path in copies))
            subprocess.run(["tar", "-C", str(tmp / "copies"), *_TAR_OWNER, _TAR_MODE, "-rf", kit_tar,
                            "--verbatim-files-from", "-T", str(listing)], check=True)
        subprocess.run(["tar", "-C", str(tmp), *_TAR_OWNER, "-rf", kit_tar, ".pfslab-manifest"], check=True)
        partial = out.with_name(out.name + ".partial")
        with partial.open("wb") as stream:
            subprocess.run(["gzip", "-n", "-c", kit_tar], stdout=stream, check=True)
        partial.replace(out)
