# pfslab: Spack's builtin PRRTE (Open MPI 5's runtime) with prefix-by-default as a variant.
#
# Open MPI 5's mpirun is PRRTE's prterun. It starts its daemon (prted) on the other
# nodes over ssh, and only finds it there when the remote shell's PATH has it, or when
# given --prefix, or when PRRTE was configured --enable-prte-prefix-by-default (then it
# uses its own install prefix: src/tools/prte/prte.c, src/mca/plm/ssh). The seeds ran
# mpirun with --prefix pointing at their site's install; the toolchain installs PRRTE at
# the same path on every node, so +prefix_by_default makes that path the prefix and
# no lab needs a --prefix (Open MPI 4.1's counterpart is openmpi +orterunprefix).

from spack_repo.builtin.packages.prrte.package import Prrte as BuiltinPrrte

from spack.package import *


class Prrte(BuiltinPrrte):
    """PRRTE, optionally starting its remote daemons from its own install prefix."""

    variant(
        "prefix_by_default",
        default=False,
        description="Start remote daemons from this install's prefix, as --prefix would "
        "(--enable-prte-prefix-by-default)",
    )

    def configure_args(self):
        args = super().configure_args()
        if self.spec.satisfies("+prefix_by_default"):
            args.append("--enable-prte-prefix-by-default")
        return args
