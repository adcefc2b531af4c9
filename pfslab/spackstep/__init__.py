"""The Spack steps of the kit: `make toolchain` (scripts/toolchain) and `make mirror`
(scripts/mirror), on the kit's machine and inside client images.

packer/scripts/toolchain.sh runs scripts/toolchain while an image is provisioned, where
the kit is unpacked under /opt/pfslab with no ``.venv``: everything here runs on the
image's system python3 (Debian 12: 3.11) with the standard library only, as
``python3 -m pfslab.spackstep toolchain|mirror|profile`` (the scripts' thin wrappers).

Modules: :mod:`.step` (paths, log lines, refusals, release pins, key fingerprints),
:mod:`.spack` (the Spack used, its builtin repository, the kit's config scope),
:mod:`.profile` (a node's toolchain profile), :mod:`.toolchain` and :mod:`.mirror`.
"""
