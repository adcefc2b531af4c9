"""ReFrame's configuration: the running lab first, seed labs for dry runs, nolab last."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from pfslab import labs, rfmconfig, state


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PFSLAB_RUN_DIR", str(tmp_path / "run"))
    return tmp_path / "run"


def names(config: dict[str, Any]) -> list[str]:
    return [s["name"] for s in config["systems"]]


def test_with_no_lab_up_only_nolab_matches_this_host(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    config = rfmconfig.build()
    assert names(config)[-1] == "nolab"
    catch_all = [s["name"] for s in config["systems"] if s["hostnames"] == [".*"]]
    assert catch_all == ["nolab"]
    assert "local" not in names(config)  # a local lab exists only while it is up
    assert config["general"][0]["report_file"] == str(run_dir / "report.json")
    assert config["general"][0]["report_junit"] == str(run_dir / "junit.xml")
    assert run_dir.is_dir()


def test_every_run_is_stored_in_one_database_per_checkout_outside_the_run(run_dir: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    (storage,) = rfmconfig.build()["storage"]
    assert storage["enable"] is True and storage["backend"] == "sqlite"
    assert storage["sqlite_db_file"] == str(state.BUILD_DIR / "reframe-results.db")
    assert not Path(storage["sqlite_db_file"]).is_relative_to(run_dir)


def test_the_running_lab_comes_first_and_runs_one_job_at_a_time(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: "local")
    monkeypatch.setattr(state, "inventory", lambda lab: {"lab": lab, "title": "t", "nodes": [], "clients": []})
    config = rfmconfig.build()
    first = config["systems"][0]
    assert first["name"] == "local" and first["hostnames"] == [".*"]
    (partition,) = first["partitions"]
    assert partition["name"] == "clients" and partition["max_jobs"] == 1 and partition["scheduler"] == "local"
    assert first["outputdir"] == str(run_dir / "output")


def test_labs_provisioned_elsewhere_get_systems_that_never_match(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    config = rfmconfig.build()
    remote = {labs.system_name(n) for n in labs.lab_names() if labs.load(n)["target"] != "local"}
    for system in config["systems"]:
        if system["name"] in remote:
            assert system["hostnames"] == [f"^pfslab-never-matches-{system['name']}$"]
    assert remote <= set(names(config))
    # ReFrame allows only letters, digits, '_' and '-' in system names.
    assert "beegfs-small_plus1" in names(config) and all(
        re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", n) for n in names(config)
    )


def test_every_run_directory_is_named_by_its_utc_start_and_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "RUNS_DIR", tmp_path)
    monkeypatch.delenv("PFSLAB_RUN_DIR", raising=False)
    first, second = state.new_run_dir("local"), state.new_run_dir("local")
    dry = state.new_run_dir("local", "-dry")
    assert re.fullmatch(r"\d{8}T\d{6}Z", first.name)
    assert second != first and second.is_dir()  # the same second: a new name, never a shared one
    assert re.fullmatch(r"\d{8}T\d{6}Z-dry", dry.name)
    plain = rfmconfig.run_dir("local")
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{os.getpid()}", plain.name)
