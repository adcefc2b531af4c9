"""IOzone workloads: sequential N-N throughput and random small blocks (cluster mode -+m)."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest
from pfslab.workloads import cases


@rfm.simple_test
class IOzone(WorkloadTest):
    case = parameter(cases("iozone"), fmt=lambda c: c.name)
