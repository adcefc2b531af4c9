"""``pfslab health``: lab-up's repair and wait (:mod:`pfslab.lifecycle.repair`) and
lab-status's table (:mod:`pfslab.lifecycle.status`), one command for scripts/lab."""

from __future__ import annotations

from collections.abc import Sequence

from pfslab.lifecycle import Refusal, repair, status


def main(args: Sequence[str]) -> int:
    """``pfslab health converge LAB SECONDS`` (lab-up's repair and wait) or
    ``pfslab health status LAB``."""
    if len(args) == 3 and args[0] == "converge" and args[2].isdigit():
        return repair.main(args[1], int(args[2]))
    if len(args) == 2 and args[0] == "status":
        return status.status(args[1])
    raise Refusal(f"'{' '.join(args)}' is not a health command: pfslab health converge LAB SECONDS | "
                  "pfslab health status LAB")
