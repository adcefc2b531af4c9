"""The kit's developer and CI commands, and tools for its developers: not for running labs.

``scripts/deps``, ``lint``, ``check-terraform``, ``checkov``, ``lock-python``, ``test-lab``,
``cloud-emulator``, ``dry-run`` and ``render-user-data`` are thin wrappers of
``pfslab dev <tool>`` (pfslab/cli.py imports the module when the command runs; nothing
else of the kit imports them). ``scripts/deps`` runs :mod:`pfslab.dev.deps` with the
system's python3 instead, before ``.venv`` exists: it and :mod:`pfslab.dev.common` use the
standard library only. They live in the package (not under tests/) so that
``scripts/lint``'s mypy --strict checks them with the rest; ``python3 -m pfslab.dev.<tool>``
runs one from the checkout's ``.venv``.
"""
