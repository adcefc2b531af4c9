"""Every lab resolved for every target it may run on, written out for Terraform's tests
(``pfslab lab export``). Apart from pfslab/layout.py because it reads the lab files
(pfslab/labs.py), which read the layout: one module holding both tied the two in a circle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pfslab import instance, labs, layout, registry

#: The checkout and user the exported labs are resolved for (Terraform's tests).
EXPORT_ROOT = Path("/opt/pfslab")
EXPORT_ENV = {"USER": "pfslab-test"}


def export(directory: Path) -> int:
    """Every lab resolved for every target, as ``<lab>@<target>.json``, and ``pairs.json``.

    ``pairs.json`` says, per ``<lab>/<target>``, the file, whether the lab is meant for
    that target (its own or one its ``targets`` section names: ``planned``) and whether
    it maps it (``mapped``: local, or a ``targets.<target>`` section the lab file writes,
    before defaults fill one in). Terraform's tests plan these instead of raw lab files.
    """
    directory.mkdir(parents=True, exist_ok=True)
    pairs: dict[str, dict[str, Any]] = {}
    for name in labs.lab_names():
        written = labs.resolve(labs.lab_path(name)).get("targets", {})
        lab = labs.load(name)
        # A target that provisions nothing has no lab plan for Terraform to test.
        for target in [t.target for t in registry.targets().values() if t.provisions]:
            path = directory / f"{name}@{target}.json"
            # As lab-up writes it, with an instance of a fixed checkout and owner, so
            # the tests' expectations do not depend on where the kit is checked out.
            shown = instance.with_instance(layout.resolved(labs.with_defaults(lab, target), target), EXPORT_ENV, EXPORT_ROOT,
                                           target)
            path.write_text(json.dumps(shown, indent=2) + "\n")
            mapped = registry.targets()[target].namespaces or target in written
            pairs[f"{name}/{target}"] = {
                "file": path.name, "target": target, "mapped": mapped, "planned": target == lab["target"] or target in written,
            }
    (directory / "pairs.json").write_text(json.dumps(pairs, indent=2, sort_keys=True) + "\n")
    return len(pairs)
