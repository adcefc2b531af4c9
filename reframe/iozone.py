"""IOzone workloads: sequential N-N throughput and random small blocks (cluster mode -+m)."""

import reframe  # noqa: F401  ReFrame loads only the files that import it

from pfslab.rfm import WorkloadTest, define_tests


class IOzone(WorkloadTest):
    """Each workload of the labs here is a test of its own (``IOzone_<workload>``)."""


define_tests(IOzone, "iozone")
