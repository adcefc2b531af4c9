"""IOR workloads: N-1 (single shared file) and N-N sequential throughput, over MPI."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, test_cases


@rfm.simple_test
class IOR(WorkloadTest):
    case = parameter(test_cases("ior"), fmt=lambda c: c.name)
