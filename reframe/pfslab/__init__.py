"""pfslab: shared code for the lab kit (lab files, parsers, references, reports).

The ReFrame test files beside this package import it; so does ``scripts/pfslab``.
Nothing here imports ReFrame except :mod:`pfslab.rfm`, so the package is usable
(and unit-testable) without ReFrame installed.
"""

import os
from pathlib import Path

#: Top of the kit's checkout: every path the kit reads (labs, references, build) is
#: found from here. PFSLAB_ROOT, which the kit's shell scripts export, takes
#: precedence, so scripts and Python always agree on the tree they work in.
KIT_ROOT: Path = Path(os.environ.get("PFSLAB_ROOT") or Path(__file__).resolve().parents[2])

__all__ = ["KIT_ROOT"]
