"""IOR workloads: N-1 (single shared file) and N-N sequential throughput, over MPI."""

import reframe  # noqa: F401  ReFrame loads only the files that import it

from pfslab.rfm import WorkloadTest, define_tests


class IOR(WorkloadTest):
    """Each workload of the labs here is a test of its own (``IOR_<workload>``)."""


define_tests(IOR, "ior")
