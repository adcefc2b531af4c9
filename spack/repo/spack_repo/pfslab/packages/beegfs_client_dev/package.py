# pfslab: the BeeGFS client headers, as the system has them (external only).
#
# ThinkParQ's BeeGFS repository ships beegfs/beegfs.h (with beegfs_ioctl.h and
# beegfs_ioctl_functions.h, header-only) in beegfs-client-dev (deb) /
# beegfs-client-devel (rpm); scripts/roles/beegfs installs it on BeeGFS clients.
# scripts/toolchain declares it as an external at /usr, with the installed package's
# version, for BeeGFS labs only (spack/README.md: toolchain profiles); IOR +beegfs
# compiles its striping options against it. Spack never builds it.

from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class BeegfsClientDev(Package):
    """BeeGFS client development headers (beegfs/beegfs.h): the system's package, as an
    external."""

    homepage = "https://www.beegfs.io"
    has_code = False

    # The BeeGFS 7 series' client headers. Spack needs a known version for IOR's
    # dependency to be satisfiable (spack audit); the external that scripts/toolchain
    # declares carries the version the node has installed.
    version("7")

    def install(self, spec, prefix):
        raise InstallError(
            "beegfs-client-dev is taken from the system (scripts/roles/beegfs installs it on "
            "BeeGFS clients) and declared as an external by scripts/toolchain; Spack does not build it"
        )
