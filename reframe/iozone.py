"""IOzone workloads: sequential N-N throughput and random small blocks (cluster mode -+m)."""

from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, simple_test, test_cases


@simple_test
class IOzone(WorkloadTest):
    case = parameter(test_cases("iozone"), fmt=lambda c: c.name)
