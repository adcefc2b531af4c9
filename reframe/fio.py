"""fio workloads: random small blocks at a queue depth, one file per thread, one fio per node."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest
from pfslab.workloads import cases


@rfm.simple_test
class Fio(WorkloadTest):
    case = parameter(cases("fio"), fmt=lambda c: c.name)
