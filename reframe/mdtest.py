"""mdtest workloads: metadata rates for empty and small files and directory trees, over MPI."""

from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, simple_test, test_cases


@simple_test
class Mdtest(WorkloadTest):
    case = parameter(test_cases("mdtest"), fmt=lambda c: c.name)
