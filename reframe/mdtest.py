"""mdtest workloads: metadata rates for empty and small files and directory trees, over MPI."""

import reframe as rfm
from reframe.core.builtins import parameter

from pfslab.rfm import WorkloadTest, test_cases


@rfm.simple_test
class Mdtest(WorkloadTest):
    case = parameter(test_cases("mdtest"), fmt=lambda c: c.name)
