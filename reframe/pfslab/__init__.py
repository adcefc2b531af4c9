"""pfslab: shared code for the lab kit (lab files, parsers, references, reports).

The ReFrame test files beside this package import it; so does ``scripts/pfslab``.
Nothing here imports ReFrame except :mod:`pfslab.rfm`, so the package is usable
(and unit-testable) without ReFrame installed.
"""

from pathlib import Path

#: Top of the kit's checkout: every path the kit reads is found from here.
KIT_ROOT: Path = Path(__file__).resolve().parents[2]

__all__ = ["KIT_ROOT"]
