"""fio workloads: random small blocks at a queue depth, one file per thread, one fio per node."""

from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, simple_test, test_cases


@simple_test
class Fio(WorkloadTest):
    case = parameter(test_cases("fio"), fmt=lambda c: c.name)
