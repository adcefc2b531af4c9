"""pfslab/spackstep: the Spack steps behind scripts/toolchain and scripts/mirror.

The steps themselves run against a fake Spack in tests/bats/toolchain.bats; here are
their parts: a node's toolchain profile (what each family adds, the retargeted
requirements of an aarch64 client), the installed versions of a family's externals,
version order, the inputs digest a second run compares, the bundle's seal, and that the
package runs on a bare python3 (client images have no .venv).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pfslab.spackstep import mirror, profile, step, toolchain
from pfslab.spackstep.spack import Spack

KIT = Path(__file__).resolve().parents[2]
SPACK_YAML = KIT / "spack" / "spack.yaml"
FAMILIES = sorted(KIT.glob("families/*/family.json"))


def family(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


# ---- profiles -----------------------------------------------------------------------------


def test_the_default_profile_is_spack_yaml_itself() -> None:
    assert profile.profile_yaml("x86_64", "", None, [], SPACK_YAML.read_text()) is None


@pytest.mark.parametrize("path", FAMILIES, ids=lambda p: p.parent.name)
def test_a_familys_profile_requires_what_its_family_json_says(path: Path) -> None:
    data = family(path)
    toolchain_of = data.get("toolchain")
    fs = str(data["filesystem"])
    assert profile.family_toolchain(KIT, fs) == (toolchain_of or None)
    if not isinstance(toolchain_of, dict):
        assert profile.profile_yaml("x86_64", fs, None, [], SPACK_YAML.read_text()) is None
        return
    externals = toolchain_of.get("externals") or []
    versions = [f"1.{i}.0" for i in range(len(externals))]
    text = profile.profile_yaml("x86_64", fs, toolchain_of, versions, SPACK_YAML.read_text())
    assert text is not None and text.startswith(f"# Written by scripts/lib/spack.sh: the toolchain profile of x86_64 clients of {fs}.\n")
    packages = yaml.safe_load(text)["packages"]
    for name, wanted in (toolchain_of.get("require") or {}).items():
        assert packages[name] == {"require": wanted}
    for external, version in zip(externals, versions):
        assert packages[external["spack"]] == {
            "buildable": False,
            "externals": [{"spec": f"{external['spack']}@{version}", "prefix": external["prefix"]}],
        }
    assert set(packages) == set(toolchain_of.get("require") or {}) | {e["spack"] for e in externals}


def test_the_beegfs_profile_builds_ior_with_beegfs_against_the_nodes_headers() -> None:
    text = profile.profile_yaml("x86_64", "beegfs", profile.family_toolchain(KIT, "beegfs"), ["7.4.5"], "")
    assert text is not None
    assert text.split("\n", 1)[1] == (
        "packages:\n  ior:\n    require:\n    - +beegfs\n  beegfs-client-dev:\n    buildable: false\n    externals:\n"
        "    - spec: beegfs-client-dev@7.4.5\n      prefix: /usr\n"
    )
    with pytest.raises(step.StepError, match="^toolchain: the beegfs profile needs the installed versions of beegfs-client-dev$"):
        profile.profile_yaml("x86_64", "beegfs", profile.family_toolchain(KIT, "beegfs"), [], "")


def test_an_aarch64_profile_replaces_every_requirement_list_with_its_target() -> None:
    spack_yaml = SPACK_YAML.read_text()
    text = profile.profile_yaml("aarch64", "", None, [], spack_yaml)
    assert text is not None and "x86_64_v2" not in text
    packages = yaml.safe_load(text)["packages"]
    source = yaml.safe_load(spack_yaml)["spack"]["packages"]
    assert set(packages) == set(source)
    assert text.count("require::\n") == spack_yaml.count("require:\n")
    assert packages["all"]["require:"] == ["target=aarch64"]  # YAML reads `require::` so: Spack, as an override


def test_retargeting_keeps_the_packages_section_only_without_comments() -> None:
    spack_yaml = (
        "spack:\n  specs: [a]\n  packages:\n    # why\n    all:\n      require:\n      - target=x86_64_v2\n\n"
        "    b:\n      require: [target=x86_64_v2]\n  view: true\n  # packages:\n"
    )
    assert profile.retargeted_packages(spack_yaml, "aarch64") == [
        "  all:", "    require::", "    - target=aarch64", "  b:", "    require: [target=aarch64]",
    ]  # fmt: skip


def test_a_machine_or_file_system_the_kit_does_not_know_is_refused_in_one_line() -> None:
    with pytest.raises(step.StepError, match=r"^toolchain: machine 'riscv64' \(uname -m\) is not one the kit builds for \(x86_64, aarch64\)$"):
        profile.profile_target("riscv64")
    known = ", ".join(str(family(p)["filesystem"]) for p in FAMILIES)
    with pytest.raises(step.StepError, match=rf"^unknown file system 'nosuch': one of {known} \(families/<fs>/family.json\)$"):
        profile.family_toolchain(KIT, "nosuch")


def test_write_profile_scope_writes_a_profile_or_removes_the_old_one(tmp_path: Path) -> None:
    scope = tmp_path / "scope"
    assert profile.write_profile_scope(KIT, SPACK_YAML, scope, "aarch64", "", [])
    assert (scope / "packages.yaml").read_text() == profile.profile_yaml("aarch64", "", None, [], SPACK_YAML.read_text())
    assert not profile.write_profile_scope(KIT, SPACK_YAML, scope, "x86_64", "", [])
    assert not scope.exists()


def fake_dpkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "dpkg-query").write_text(f"#!/bin/sh\n[ \"$4\" = beegfs-client-dev ] && echo '{answer}'\n")
    (bin_dir / "dpkg-query").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def test_an_externals_version_is_the_installed_packages_without_epoch_and_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dpkg(tmp_path, monkeypatch, "20:7.4.5-deb12")
    header = tmp_path / "sysroot" / "usr" / "include" / "beegfs" / "beegfs.h"
    header.parent.mkdir(parents=True)
    header.write_text("")
    assert profile.external_versions(KIT, "beegfs", {"PFSLAB_SYSROOT": str(tmp_path / "sysroot")}) == ["7.4.5"]
    assert profile.external_versions(KIT, "nfs", {}) == []
    refused = (r"^toolchain: the beegfs toolchain profile takes beegfs-client-dev from the system \(/usr/include/beegfs/beegfs.h\), "
               r"and beegfs-client-dev \(deb\) / beegfs-client-devel \(rpm\) is not installed; 'scripts/roles/beegfs install client' installs it$")
    with pytest.raises(step.StepError, match=refused):
        profile.external_versions(KIT, "beegfs", {"PFSLAB_SYSROOT": str(tmp_path / "elsewhere")})
    fake_dpkg(tmp_path, monkeypatch, "")
    with pytest.raises(step.StepError, match=refused):
        profile.external_versions(KIT, "beegfs", {"PFSLAB_SYSROOT": str(tmp_path / "sysroot")})


# ---- versions, pins, keys -------------------------------------------------------------------


PAIRS = [("1.1.0", "1.1.0"), ("1.0.2", "1.1.0"), ("1.2.0.dev0", "1.1.0"), ("1.10.0", "1.9.9"), ("1.1", "1.1.0"),
         ("1.1.0", "1.1.0rc1"), ("1.1.0~rc1", "1.1.0"), ("2.0", "10.0"), ("1.01", "1.1"), ("1.1.0-1", "1.1.0")]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_version_order_is_sort_dash_v(a: str, b: str) -> None:
    first = subprocess.run(["sort", "-V"], input=f"{b}\n{a}\n", capture_output=True, text=True, check=True).stdout.split("\n")[0]
    assert step.version_ge(a, b) == (first == b)


def test_a_pin_missing_from_release_conf_is_named(tmp_path: Path) -> None:
    (tmp_path / "spack").mkdir()
    (tmp_path / "spack" / "release.conf").write_text("SPACK_RELEASE=v1.0.0\nSPACK_RELEASE=v1.1.0\n")
    paths = step.Paths(root=tmp_path, prefix=tmp_path, env=tmp_path)
    assert step.release_pin(paths, "SPACK_RELEASE") == "v1.1.0"
    with pytest.raises(step.StepError, match="^spack/release.conf does not set SPACK_MIN_VERSION$"):
        step.release_pin(paths, "SPACK_MIN_VERSION")


def test_a_key_is_trusted_only_with_its_fingerprint(tmp_path: Path) -> None:
    key = tmp_path / "key.pub"
    key.write_text("")
    with pytest.raises(step.StepError, match=r"^K: no key fingerprint pinned \(BUNDLE_KEY\); refusing to trust an unverified key$"):
        step.verify_key_fingerprint(key, "1234", "K", "BUNDLE_KEY")
    with pytest.raises(step.StepError, match=r"^K: key fingerprint mismatch: expected 0{40} \(BUNDLE_KEY\), got no key; not trusted$"):
        step.verify_key_fingerprint(key, "00000 " * 8, "K", "BUNDLE_KEY")


# ---- the inputs digest and the bundle's seal --------------------------------------------------------


def test_the_inputs_digest_covers_the_environment_pins_kit_scope_spack_and_profile(tmp_path: Path) -> None:
    env, prefix = tmp_path / "env", tmp_path / "prefix"
    (env / "repo" / "b").mkdir(parents=True)
    (env / "spack.yaml").write_text("spack: {}\n")
    (env / "repo" / "b" / "package.py").write_text("B\n")
    (env / "repo" / "a.yaml").write_text("A\n")
    (env / "repo" / "notes.txt").write_text("not an input\n")
    (env / "repo" / "link.py").symlink_to(env / "repo" / "a.yaml")
    (prefix / "spack-config" / "dir.yaml").mkdir(parents=True)
    (prefix / "spack-config" / "repos.yaml").write_text("R\n")
    paths = step.Paths(root=KIT, prefix=prefix, env=env)
    spack = Spack("/site/spack/")
    parts = [b"spack 1.1.0 at /site/spack/\n", b"spack: {}\n", (KIT / "spack" / "release.conf").read_bytes(), b"A\n", b"B\n", b"R\n"]
    assert toolchain.inputs_digest(paths, spack, "1.1.0") == hashlib.sha256(b"".join([*parts, b"profile default\n"])).hexdigest()
    (prefix / "spack-profile").mkdir()
    (prefix / "spack-profile" / "packages.yaml").write_text("P\n")
    mark = hashlib.sha256(b"P\n").hexdigest()
    assert toolchain.inputs_digest(paths, spack, "1.1.0") == hashlib.sha256(b"".join([*parts, f"profile {mark}\n".encode()])).hexdigest()


def test_a_sealed_bundle_checks_out_and_names_its_spack_yaml(tmp_path: Path) -> None:
    env, out = tmp_path / "env", tmp_path / "bundle"
    env.mkdir()
    (env / "spack.yaml").write_text("spack: {}\n")
    (env / "spack.lock").write_text("{}\n")
    mirror.prepare_out(out)
    for name in ("spack.tar.gz", "spack-packages.tar.gz"):
        (out / name).write_text(name)
    mirror.seal_bundle(step.Paths(root=KIT, prefix=tmp_path, env=env), out, "1.1.0")
    assert subprocess.run(["sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS"], cwd=out, check=False).returncode == 0
    assert [line.split()[1] for line in (out / "SHA256SUMS").read_text().splitlines()] == list(mirror.SUMMED)
    conf = dict(line.split("=", 1) for line in (out / "bundle.conf").read_text().splitlines() if "=" in line)
    assert conf["SPACK_YAML_SHA256"] == hashlib.sha256(b"spack: {}\n").hexdigest()
    assert conf["BINARIES"] == "no" and conf["SIGNING_KEY_FINGERPRINT"] == "" and conf["SPACK_VERSION"] == "1.1.0"
    mirror.prepare_out(out)  # a bundle may be refreshed; its bundle.conf goes until the run completes
    assert not (out / "bundle.conf").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "file").write_text("keep")
    with pytest.raises(step.StepError, match="is a non-empty directory that is not a pfslab bundle; choose another path$"):
        mirror.prepare_out(tmp_path / "mine")


# ---- a bare python3 ------------------------------------------------------------------------------


def test_the_steps_run_on_a_bare_python3_with_the_standard_library_only() -> None:
    """An image runs them before any .venv: no site-packages (-S), only the checkout."""
    code = ("import sys; import pfslab.spackstep.__main__, pfslab.spackstep.toolchain, pfslab.spackstep.mirror; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'jsonschema', 'pytest')))")  # fmt: skip
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=KIT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


# ---- what make mirror asks Spack ----------------------------------------------------------------


class RecordingSpack(Spack):
    """Records each Spack command; `gpg export` writes the key file a real Spack would."""

    def __init__(self) -> None:
        super().__init__("/fake/spack")
        self.calls: list[str] = []

    def run(self, *args: str | Path) -> bool:
        self.calls.append(" ".join(map(str, args)))
        if args[:2] == ("gpg", "export"):
            Path(args[2]).write_text(f"FPR {args[3]}\n")
        return True


def test_make_mirrors_plan_sources_bootstrap_then_a_signed_build_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # gpg as `gpg --with-colons --show-keys` prints the key file's "FPR <hex>" lines.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gpg").write_text(
        "#!/bin/sh\nfor f; do :; done\nawk '$1 == \"FPR\" {print \"pub:u:4096:1:0000:::::::scESC:\"; print \"fpr:::::::::\" $2 \":\"}' \"$f\"\n"
    )
    (tmp_path / "bin" / "gpg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    key = "0123456789ABCDEF0123456789ABCDEF01234567"
    paths, out = step.Paths(root=KIT, prefix=tmp_path, env=tmp_path / "env"), tmp_path / "bundle"
    out.mkdir()
    spack, log = RecordingSpack(), step.Log("mirror")
    mirror.fill_mirror(paths, log, spack, out)
    mirror.fill_buildcache(paths, log, spack, out, {"PFSLAB_SPACK_SIGNING_KEY": key})
    assert spack.calls == [
        f"-c view:false -e {paths.env} mirror create -d {out}/mirror --all",
        f"bootstrap mirror --binary-packages {out}/bootstrap",
        f"-c view:false -e {paths.env} install",
        f"gpg export {out}/signing-key.pub {key}",
        f"-c view:false -e {paths.env} buildcache push --key {key} --update-index {out}/buildcache",
    ]
    (out / "buildcache").mkdir()
    assert mirror.bundle_key(out) == key
    spack.calls.clear()
    mirror.fill_buildcache(paths, log, spack, out, {"PFSLAB_MIRROR_BINARIES": "0"})
    assert spack.calls == [] and not (out / "buildcache").exists() and not (out / "signing-key.pub").exists()
