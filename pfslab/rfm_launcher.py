"""ReFrame's launcher for a lab's own mpirun line (registered as ``lab-mpirun``).

ReFrame's ``mpirun`` launcher writes ``mpirun -np N`` and nothing else; a lab's line
also names its hostfile, its mapping and whatever its fabric needs (``--mca ...``), and
a seed lab's line is the seed's own. This launcher writes the line the kit rendered for
the test (:func:`pfslab.tools.base.start`: the lab's mpirun line with the case's rank
count and hostfile, or without the hostfile inside a Slurm allocation). The rsh agent
and MCA settings stay in the job's environment (``env_vars``), as on every lab.
"""

from __future__ import annotations

from typing import Any

from reframe.core.backends import register_launcher
from reframe.core.launchers import JobLauncher

from pfslab.scheduler import LAB_MPIRUN as NAME


@register_launcher(NAME)
class LabMpirun(JobLauncher):  # type: ignore[misc]  # ReFrame's classes are untyped
    """Writes ``line``, the lab's start line as the test rendered it, before the executable."""

    def __init__(self) -> None:
        super().__init__()
        self.line = ""

    def command(self, job: Any) -> list[str]:
        if not self.line:
            raise ValueError(f"the {NAME} launcher of {job.name} was given no mpirun line (the test sets it)")
        # One token as rendered: a lab's line may quote its own arguments.
        return [self.line]
