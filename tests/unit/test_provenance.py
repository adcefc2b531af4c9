"""What a run's provenance.json records of where it was launched from."""

from __future__ import annotations

from pfslab import provenance

def test_a_run_launched_from_the_kits_machine_names_it_and_its_commit() -> None:
    # PFSLAB_LAUNCHED_FROM, set by scripts/lib/login.sh for a run on a remote lab's login node.
    assert provenance.launched_from("kit-host 0123abcd") == {"host": "kit-host", "commit": "0123abcd", "via": "login node"}
    assert provenance.launched_from("kit-host ") == {"host": "kit-host", "via": "login node"}
    assert provenance.launched_from("") is None
