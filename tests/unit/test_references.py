"""References: provenance required, one tolerance policy, exact lookups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import labs, references


def write(tmp_path: Path, entries: list[dict[str, Any]], lab: str = "x") -> Path:
    path = tmp_path / f"{lab}.yaml"
    path.write_text(yaml.safe_dump({"lab": lab, "references": entries}))
    return path


def entry(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "workload": "ior-n1", "operation": "read", "threads": 16, "value": 24.8, "unit": "GB/s", "kind": "peak",
        "source": {"document": "000_ded3896d23f7a332.txt", "where": "Figure 3 text",
                   "quote": "the maximum read performance was 24.8 GB/s at 16 threads"},
    }
    base.update(changes)
    return base


@pytest.mark.parametrize("lab", [n for n in labs.lab_names() if references.path_for(n).is_file()])
def test_every_shipped_references_file_loads(lab: str) -> None:
    refs = references.load(lab)
    assert refs or references.notes(lab), f"{lab} has a references file with neither references nor notes"
    assert all(r.source.get("document") for r in refs)


def test_a_reference_without_a_source_is_an_error(tmp_path: Path) -> None:
    bad = entry()
    del bad["source"]
    with pytest.raises(references.ReferenceError, match=r"references\[0\]: a reference needs a source"):
        references.load("x", write(tmp_path, [bad]))


def test_a_source_needs_where_or_quote(tmp_path: Path) -> None:
    with pytest.raises(references.ReferenceError, match="needs a source"):
        references.load("x", write(tmp_path, [entry(source={"document": "seed.txt"})]))


@pytest.mark.parametrize(
    ("change", "message"),
    [({"unit": "GB"}, "unit 'GB' is unknown"), ({"kind": "guess"}, "kind 'guess' is not one of"), ({"value": 0}, "value must be a finite number > 0, not 0")],
)
def test_malformed_entries_are_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(references.ReferenceError, match=message):
        references.load("x", write(tmp_path, [entry(**change)]))


def test_the_file_must_belong_to_the_lab(tmp_path: Path) -> None:
    with pytest.raises(references.ReferenceError, match="'lab' must be 'x'"):
        references.load("x", write(tmp_path, [entry()], lab="y").rename(tmp_path / "x.yaml"))


def test_policy_tolerance_applies_and_is_mirrored_for_times(tmp_path: Path) -> None:
    peak, time = references.load("x", write(tmp_path, [entry(), entry(operation="wall_time", unit="s", value=100)]))
    assert (peak.lower, peak.upper) == (references.policy()["peak"]["lower"], None)
    assert (time.lower, time.upper) == (None, -references.policy()["peak"]["lower"])  # type: ignore[operator]


def test_own_tolerance_wins_over_the_policy(tmp_path: Path) -> None:
    (ref,) = references.load("x", write(tmp_path, [entry(kind="baseline", tolerance={"lower": -0.42, "upper": None})]))
    assert ref.lower == -0.42


def test_per_test_lookup_is_exact_and_sweep_references_stay_apart(tmp_path: Path) -> None:
    refs = references.load("x", write(tmp_path, [entry(threads=None, value=23.8, kind="sustained"), entry()]))
    assert references.lookup(refs, "ior-n1", "read", 16, "full").value == 24.8  # type: ignore[union-attr]
    assert references.lookup(refs, "ior-n1", "read", 64, "full") is None
    assert [r.value for r in references.sweep_references(refs, "ior-n1", "read", "full")] == [23.8]
    assert references.lookup(refs, "ior-n1", "write", 16, "full") is None


def test_mode_bound_references_apply_to_their_mode_only(tmp_path: Path) -> None:
    refs = references.load("x", write(tmp_path, [entry(mode="quick")]))
    assert references.lookup(refs, "ior-n1", "read", 16, "quick") is not None
    assert references.lookup(refs, "ior-n1", "read", 16, "full") is None


@pytest.mark.parametrize(
    ("tolerance", "message"),
    [
        # 0.001 GB/s would pass a 10 GB/s peak.
        ({"lower": -3}, "tolerance lower -3 is not allowed"),
        ({"lower": 0.2, "upper": None}, "tolerance lower 0.2 is not allowed"),
        ({"lower": -0.1, "upper": -0.5}, "tolerance upper -0.5 is not allowed"),
        ({"lower": float("nan")}, "tolerance lower nan is not allowed"),
        ({"lower": "-0.1"}, "tolerance lower '-0.1' is not allowed"),
        ({"lower": None, "upper": None}, "bounds nothing, so every value would pass"),
        ({"lower": -0.1, "margin": 2}, "tolerance {'lower': -0.1, 'margin': 2} is not allowed"),
    ],
)
def test_a_tolerance_that_bounds_nothing_or_too_much_is_refused_in_one_line(
        tmp_path: Path, tolerance: dict[str, Any], message: str) -> None:
    with pytest.raises(references.ReferenceError) as err:
        references.load("x", write(tmp_path, [entry(value=10, tolerance=tolerance)]))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("x.yaml: references[0] (ior-n1 read at 16 threads): ")
    assert message in text
    assert text.endswith("allowed: a mapping with lower in [-1, 0] or null and upper >= 0 or null, not both null "
                         "(lower -0.10: at least 90 % of the value)")


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "'ten'", "true"])
def test_a_value_must_be_a_finite_number(tmp_path: Path, value: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"lab": "x", "references": [entry(value=1.5)]}).replace("value: 1.5", f"value: {value}"))
    with pytest.raises(references.ReferenceError,
                       match=r"^x\.yaml: references\[0\] \(ior-n1 read at 16 threads\): value must be a finite number > 0, not "):
        references.load("x", path)
    path.write_text(yaml.safe_dump({"lab": "x", "references": [entry(kind="baseline", tolerance={"lower": -0.3})]})
                    .replace("kind: baseline", "kind: baseline\n  noise: .nan"))
    with pytest.raises(references.ReferenceError, match="noise must be a finite number >= 0, not nan"):
        references.load("x", path)


def test_the_policy_tolerances_are_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = yaml.safe_load(references.POLICY_PATH.read_text())
    policy["kinds"]["peak"] = {"lower": None, "upper": None}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    monkeypatch.setattr(references, "POLICY_PATH", path)
    references.policy.cache_clear()
    try:
        with pytest.raises(references.ReferenceError, match=r"^policy\.yaml: kinds\.peak: tolerance .* bounds nothing"):
            references.policy()
    finally:
        references.policy.cache_clear()
