"""Tools for the kit's developers, not for running labs: nothing in the kit imports them.

They live in the package (not under tests/) so that ``scripts/lint``'s mypy --strict
checks them with the rest and ``python3 -m pfslab.dev.<tool>`` runs them from the
checkout's ``.venv``.
"""
