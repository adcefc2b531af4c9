"""Runs only when no lab is up, to say so instead of finding no tests."""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import sanity_function

from pfslab.rfmconfig import NO_LAB


@rfm.simple_test
class NoLabUp(rfm.RunOnlyRegressionTest):
    descr = "no lab is up: the kit's workloads need one"
    valid_systems = [NO_LAB]
    valid_prog_environs = ["pfslab"]
    executable = "echo"
    executable_opts = ['"no lab is up: run make lab-up (LAB=local by default), then run again"']
    tags = {"pfslab"}

    @sanity_function
    def fail_with_reason(self):
        return sn.assert_true(False, msg="no lab is up: run 'make lab-up' first")
