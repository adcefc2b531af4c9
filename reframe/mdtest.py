"""mdtest workloads: metadata rates for empty and small files and directory trees, over MPI."""

import reframe  # noqa: F401  ReFrame loads only the files that import it

from pfslab.rfm import WorkloadTest, define_tests


class Mdtest(WorkloadTest):
    """Each workload of the labs here is a test of its own (``Mdtest_<workload>``)."""


define_tests(Mdtest, "mdtest")
