"""IOzone workloads: sequential N-N throughput and random small blocks (cluster mode -+m)."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, test_cases


@rfm.simple_test
class IOzone(WorkloadTest):
    case = parameter(test_cases("iozone"), fmt=lambda c: c.name)
