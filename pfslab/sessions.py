"""A run's ReFrame session, read back from ReFrame's results database.

ReFrame stores every session it runs (``storage`` in the generated configuration,
:data:`pfslab.rfmconfig.RESULTS_DB`). A run directory names its session by UUID
(``reframe_session`` in provenance.json, which ``make bench`` writes, else the UUID in
its report.json). Sessions are read through ReFrame's own ``--describe-stored-sessions``,
not the database's tables, so the kit never depends on ReFrame's schema.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, rfmconfig
from pfslab.errors import KitError

#: A session UUID as ReFrame writes it; anything else never reaches ReFrame's query
#: (its session filter is a Python expression).
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class SessionError(KitError, RuntimeError):
    """ReFrame could not read its results database; the message says why."""


def database() -> Path:
    """The results database ReFrame uses: RFM_SQLITE_DB_FILE (ReFrame's own override) or the kit's."""
    explicit = os.environ.get("RFM_SQLITE_DB_FILE")
    return Path(explicit) if explicit else rfmconfig.RESULTS_DB


def session_uuid(provenance: dict[str, Any], report: dict[str, Any]) -> str | None:
    """The run's session: as ``make bench`` recorded it, else as ReFrame's report names it."""
    found = provenance.get("reframe_session") or report.get("session_info", {}).get("uuid")
    return str(found) if found and _UUID.fullmatch(str(found)) else None


def _reframe() -> Path:
    # The reframe of the environment this pfslab runs in (.venv), as scripts/bench uses.
    return Path(sys.executable).parent / "reframe"


def fetch(uuids: list[str]) -> dict[str, dict[str, Any]]:
    """The stored sessions among ``uuids``, by UUID (those not stored are absent)."""
    wanted = sorted({u for u in uuids if _UUID.fullmatch(u)})
    if not wanted or not database().is_file():
        return {}
    query = "?uuid in (" + ", ".join(f"'{u}'" for u in wanted) + ",)"
    with tempfile.TemporaryDirectory(prefix="pfslab-sessions-") as scratch:
        # The configuration makes a run directory for every invocation: a scratch one here.
        env = {**os.environ, "RFM_CONFIG_FILES": str(KIT_ROOT / "reframe" / "config" / "settings.py"),
               "PFSLAB_RUN_DIR": scratch, "PFSLAB_ROOT": str(KIT_ROOT)}
        try:
            proc = subprocess.run([str(_reframe()), "--nocolor", "--describe-stored-sessions", query],
                                  env=env, cwd=scratch, capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SessionError(f"could not ask ReFrame ({_reframe()}) for its stored sessions: {err}") from None
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise SessionError(f"reframe --describe-stored-sessions failed on {database()}: "
                           f"{lines[-1] if lines else f'exit status {proc.returncode}'}")
    try:
        sessions = json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise SessionError(f"reframe --describe-stored-sessions printed no JSON ({err})") from None
    return {str(s["session_info"]["uuid"]): s for s in sessions}
