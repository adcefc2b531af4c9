"""IO500: its standard phases (ior-easy/hard, mdtest-easy/hard, find) and score, over MPI.

The config file is rendered from the lab (pfslab/tools/io500_config.py): the list's rules in full
mode, a short stonewall in quick mode (IO500 marks such a run INVALID: the kit shows
it as not list-valid). A run broken in any other way fails its test.
"""

import json

from reframe.core.builtins import variable

from pfslab import workloads
from pfslab.tools import io500_config as io500
from pfslab.results import ParseError
from pfslab.rfm import WorkloadTest, define_tests


class IO500(WorkloadTest):
    """IO500 runs, a test per workload (``IO500_<workload>``)."""

    #: The run in IO500's terms (phases, scores, validity) as JSON, for the report.
    io500_summary = variable(str, value="")

    def _parse_step(self, n, step):
        parsed = super()._parse_step(n, step)
        case = self.spec
        wall = io500.stonewall(workloads.sizes_for(self.workload_config, case.mode), case.mode, case.workload)
        why = io500.judge_run(parsed.details, case.mode, wall)
        if why is not None:
            raise ParseError(why)
        self.io500_summary = json.dumps(io500.summary(parsed.details, case.mode, wall))
        return parsed


define_tests(IO500, "io500")
