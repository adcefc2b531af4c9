"""Application I/O from the CephFS study: SEACAS io_shell mesh copies and LAMMPS dumps.

Measured as completion time (lower is better), as the study argues real workloads
should be: "measuring overall system performance (measured in completion time ...)".
"""

from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, simple_test, test_cases


@simple_test
class IOShell(WorkloadTest):
    case = parameter(test_cases("ioshell"), fmt=lambda c: c.name)


@simple_test
class LAMMPS(WorkloadTest):
    case = parameter(test_cases("lammps"), fmt=lambda c: c.name)
