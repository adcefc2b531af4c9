"""fio workloads: random small blocks at a queue depth, one file per thread, one fio per node."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, test_cases


@rfm.simple_test
class Fio(WorkloadTest):
    case = parameter(test_cases("fio"), fmt=lambda c: c.name)
