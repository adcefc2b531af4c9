"""IOR workloads: N-1 (single shared file) and N-N sequential throughput, over MPI."""

from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, simple_test, test_cases


@simple_test
class IOR(WorkloadTest):
    case = parameter(test_cases("ior"), fmt=lambda c: c.name)
