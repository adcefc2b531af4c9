"""Application I/O from the CephFS study: SEACAS io_shell mesh copies and LAMMPS dumps.

Measured as completion time (lower is better), as the study argues real workloads
should be: "measuring overall system performance (measured in completion time ...)".
"""

import reframe  # noqa: F401  ReFrame loads only the files that import it

from pfslab.rfm import WorkloadTest, define_tests


class IOShell(WorkloadTest):
    """io_shell mesh copies, a test per workload (``IOShell_<workload>``)."""


class LAMMPS(WorkloadTest):
    """LAMMPS dumps, a test per workload (``LAMMPS_<workload>``)."""


define_tests(IOShell, "ioshell")
define_tests(LAMMPS, "lammps")
