"""fio workloads: random small blocks at a queue depth, one file per thread, one fio per node."""

import reframe  # noqa: F401  ReFrame loads only the files that import it

from pfslab.rfm import WorkloadTest, define_tests


class Fio(WorkloadTest):
    """Each workload of the labs here is a test of its own (``Fio_<workload>``)."""


define_tests(Fio, "fio")
