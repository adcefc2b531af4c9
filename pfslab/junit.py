"""A JUnit report for a run that ended before ReFrame wrote its own.

ReFrame writes ``junit.xml`` into every run directory it reports on (``report_junit``
in the generated configuration). A run that ends earlier (no test selected, ReFrame
failed, the run was cut) still gets one, holding one error that says why, so a CI
system reading the run directory sees an error, never a missing file or an empty pass.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

FILE_NAME = "junit.xml"


def write_error(run_dir: Path, message: str) -> Path | None:
    """Write ``junit.xml`` with one error into ``run_dir``, unless ReFrame wrote one; its path if written."""
    path = run_dir / FILE_NAME
    if path.is_file() and path.stat().st_size > 0:
        return None
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="pfslab", tests="1", errors="1", failures="0", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="pfslab", name="run")
    error = ET.SubElement(case, "error", message=message, type="run")
    error.text = message
    run_dir.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
    return path
