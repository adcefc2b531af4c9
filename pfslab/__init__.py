"""pfslab: shared code for the lab kit (lab files, parsers, references, reports).

The ReFrame test files (``reframe/``) import it, and its command line is ``pfslab``
(``make deps`` installs the package into ``.venv`` in editable mode).
Nothing here imports ReFrame except :mod:`pfslab.rfm`, so the package is usable
(and unit-testable) without ReFrame installed.
"""

import os
from pathlib import Path

#: Top of the kit's checkout: every path the kit reads (labs, references, build) is
#: found from here. PFSLAB_ROOT, which the kit's shell scripts export, takes
#: precedence, so scripts and Python always agree on the tree they work in.
KIT_ROOT: Path = Path(os.environ.get("PFSLAB_ROOT") or Path(__file__).resolve().parents[1])

__all__ = ["KIT_ROOT"]
