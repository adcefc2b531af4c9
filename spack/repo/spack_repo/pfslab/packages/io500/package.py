# pfslab: the IO500 benchmark harness, which Spack's builtin repository lacks.
#
# IO500 does not use the IOR and pfind that are installed elsewhere: each release tag
# pins the exact IOR and pfind commits in its prepare.sh (IOR_HASH, PFIND_HASH),
# builds them in ./build and links their static libraries into the io500 binary.
# This recipe does the same with one `resource` per pinned commit, so an io500 result
# is comparable with the published lists. It installs only io500 and io500-verify
# (plus the sample configurations), never the bundled ior/mdtest, which would clash
# in a view with the toolchain's own IOR.

from spack_repo.builtin.build_systems.makefile import MakefilePackage

from spack.package import *


class Io500(MakefilePackage):
    """The IO500 benchmark: IOR easy/hard, mdtest easy/hard and parallel find, run
    as one job with the stonewalling and validity rules of the IO500 lists."""

    homepage = "https://io500.org"
    git = "https://github.com/IO500/io500.git"

    license("MIT")

    # Release tags, each with the IOR and pfind commits its prepare.sh pins.
    # io500-isc26_v2 only moves PFIND_HASH to d08501f9976, a pfind commit that could
    # not be verified when this recipe was written: add it once its full hash is known.
    version(
        "isc26_v1",
        tag="io500-isc26_v1",
        commit="0befb5466d19d16be00cfc6be6cbbfb260206fd5",
        preferred=True,
    )
    version("sc25_v1", tag="io500-sc25_v1", commit="29cd47d852f6051e1d4502230d2d6d5b509a5a6d")

    # prepare.sh: IOR_HASH=5fcf0ba995f (isc26_v1), IOR_HASH=8ab8f69b32b919 (sc25_v1)
    resource(
        name="ior",
        git="https://github.com/hpc/ior.git",
        commit="5fcf0ba995fd92164d50e344597e2d8203298c08",
        destination="build",
        placement="ior",
        when="@isc26_v1",
    )
    resource(
        name="ior",
        git="https://github.com/hpc/ior.git",
        commit="8ab8f69b32b919889015122f351914ec12bc84a2",
        destination="build",
        placement="ior",
        when="@sc25_v1",
    )
    # prepare.sh: PFIND_HASH=aaba722a178 (both releases)
    resource(
        name="pfind",
        git="https://github.com/VI4IO/pfind.git",
        commit="aaba722a178d38799125a271a7f554d004713363",
        destination="build",
        placement="pfind",
    )

    depends_on("c", type="build")
    depends_on("mpi")
    # IOR's ./bootstrap runs autoreconf, as in Spack's own ior recipe.
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")

    def edit(self, spec, prefix):
        # The release's Makefile hard-codes CC = mpicc; use the concretized MPI's wrapper.
        filter_file(r"^CC = mpicc$", f"CC = {spec['mpi'].mpicc}", "Makefile")

    def build(self, spec, prefix):
        mpicc = spec["mpi"].mpicc
        # IOR and mdtest as prepare.sh builds them: libaiori.a and build.conf in src/.
        with working_dir(join_path("build", "ior")):
            Executable("./bootstrap")()
            Executable("./configure")(f"--prefix={self.stage.path}/ior-unused", f"CC={mpicc}")
            make("-C", "src")
        # pfind without ./prepare.sh: that script clones lz4 from the network, which a
        # Spack build (and an air-gapped site) must not do. LZ4 is an optional speed-up.
        with working_dir(join_path("build", "pfind")):
            Executable("./compile.sh")(extra_env={"CC": mpicc})
        # The Makefile derives VERSION from `git describe`; a mirrored source has no
        # .git, so name the release explicitly.
        make(f"VERSION_GIT=io500-{spec.version}", f"CC={mpicc}")

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install("io500", prefix.bin)
        install("io500-verify", prefix.bin)
        share = join_path(prefix.share, "io500")
        mkdirp(share)
        for ini in find(".", "config-*.ini", recursive=False):
            install(ini, share)
