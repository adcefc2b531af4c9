# pfslab: Spack's builtin IOR with BeeGFS striping support as a variant.
#
# IOR has no configure option for BeeGFS: its configure.ac (3.3.0 and 4.0.0) only
# checks for the header beegfs/beegfs.h (AC_CHECK_HEADERS) and, when it is there,
# defines HAVE_BEEGFS_BEEGFS_H, which compiles the POSIX backend's BeeGFS striping:
# `-O beegfsNumTargets=N,beegfsChunkSize=S` in 3.3.0 (which otherwise stops with
# "ior was not compiled with BeeGFS support"), --posix.beegfs.NumTargets/ChunkSize in
# 4.0.0. So +beegfs points the compiler at the system's BeeGFS client headers (the
# beegfs-client-dev package, an external: scripts/roles/beegfs installs it on BeeGFS
# clients) and fails the build if configure did not find them; ~beegfs tells configure
# the header is absent, so that a node that happens to have it builds what its
# spec says.

from spack_repo.builtin.packages.ior.package import Ior as BuiltinIor

from spack.package import *


class Ior(BuiltinIor):
    """IOR and mdtest, with BeeGFS striping options (+beegfs) from the system's headers."""

    variant(
        "beegfs",
        default=False,
        description="BeeGFS striping options (beegfsNumTargets, beegfsChunkSize): needs the "
        "BeeGFS client headers (beegfs-client-dev, an external)",
    )
    depends_on("beegfs-client-dev", when="+beegfs")

    def configure_args(self):
        args = super().configure_args()
        if self.spec.satisfies("+beegfs"):
            args.append(f"CPPFLAGS=-I{self.spec['beegfs-client-dev'].prefix.include}")
        else:
            args.append("ac_cv_header_beegfs_beegfs_h=no")
        return args

    @run_after("configure")
    def check_beegfs(self):
        if not self.spec.satisfies("+beegfs"):
            return
        config = join_path(self.build_directory, "src", "config.h")
        with open(config) as f:
            found = "#define HAVE_BEEGFS_BEEGFS_H 1" in f.read()
        if not found:
            raise InstallError(
                f"ior +beegfs: configure did not find beegfs/beegfs.h under "
                f"{self.spec['beegfs-client-dev'].prefix.include} (is beegfs-client-dev installed?)"
            )
