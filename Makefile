# pfslab: the front door. Every target is a thin call into scripts/; `make help` lists them.
#
#   make demo            first run on a fresh machine: deps, local lab, quick suite, verdict
#   make test            the offline tests (pytest, bats, terraform, shellcheck)

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

LAB ?=
LABS ?=
TARGET ?=
ROLE ?= all
IMAGE ?=
USER_DATA ?=
MIRROR ?=
BUNDLE_KEY ?=
MIRROR_OUT ?=
# make tools: a folder of git bundles or bare repositories of IOR, IO500, pfind, cdcl-schema-tools
# (<owner>+<name>.bundle) to build from instead of their upstream URLs.
TOOLS_MIRROR ?=
# make smoke: a folder for its scratch directory (default /tmp), and tools whose absence
# fails it (CI: ior,mdtest; without, a job whose tool is not here is skipped, and said so).
SCRATCH ?=
SMOKE_REQUIRE ?=
MODE ?=
REPEAT ?= 3
RUN ?=
A ?=
B ?=
REFRAME_ARGS ?=
TESTS ?=
# A local lab's bridge and subnet instead of its file's (a second checkout on the same
# host: README "Two checkouts on one host"); OWNER tags a cloud lab's resources.
BRIDGE ?=
SUBNET ?=
OWNER ?=
# make lab-down: PURGE=1 also removes what others made with the lab's tags (reported otherwise).
PURGE ?=
# make expired: ALL=1 lists everyone's labs, REGIONS="..." adds regions to the labs' own.
ALL ?=
REGIONS ?=
# The lab whose hosts `make hosts-up` starts on this machine (labs with hosts: hosts-cephfs).
HOSTS ?=
PYTHON := .venv/bin/python
# The kit's command (pfslab/cli.py), installed into .venv by `make deps`.
PFSLAB := .venv/bin/pfslab

export PFSLAB_MODE := $(MODE)

# A make value as one shell word, whatever it holds (quotes, spaces, ;, ||): sq always
# (an environment value), arg only when set (a script sees no argument, not an empty one).
sq = '$(subst ','\'',$(1))'
arg = $(if $(1),$(call sq,$(1)))

.PHONY: help deps deps-test calibrate toolchain tools smoke mirror test-spack checkov lock user-data remote-up images image-boot-test test-images lab-up lab-down expired lab-status bench dry-run report compare baseline overhead demo test test-python test-bats test-terraform lint test-lab test-cloud test-remote hosts-up hosts-down hosts-status

help: ## Show the targets and the variables they take
	@echo "pfslab: reproduce published storage results and run acceptance tests on storage labs"
	@echo
	@grep -E '^[a-z][a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-14s %s\n", $$1, $$2}'
	@echo
	@echo "Variables: LAB=<lab> (default local; labs: $$(ls labs/*.yaml | xargs -n1 basename | sed 's/.yaml//' | tr '\n' ' '))"
	@echo "           MODE=quick|full (default: the lab's), REFRAME_ARGS='-n IOR' (filters for make bench)"
	@echo "           BRIDGE=pfslab1 SUBNET=10.98.0.0/24 (make lab-up: a second checkout's local lab), OWNER=<who> (cloud owner tag)"
	@echo "           PURGE=1 (make lab-down: also what others tagged with the lab), ALL=1 REGIONS=\"..\" (make expired)"
	@echo "           RUN=<lab>/<timestamp> (make report), A=... B=... (make compare), REPEAT=n (make baseline)"
	@echo "           MIRROR=<bundle dir> BUNDLE_KEY=<its signing key's fingerprint> (make toolchain), MIRROR_OUT=<dir> (make mirror, default build/spack-bundle)"
	@echo "           TOOLS_MIRROR=<folder of git bundles or bare repositories: hpc+ior.bundle, IO500+io500.bundle, ...> (make tools, offline)"
	@echo "           FILESYSTEM=beegfs (make toolchain on a BeeGFS client: IOR with BeeGFS striping, spack/README.md)"
	@echo "           FAMILY=<family> (make images, default ceph), HOSTS=<lab> (make hosts-up/hosts-down/hosts-status: hosts-cephfs)"
	@echo
	@echo "Targets (targets/<target>/, one folder each; a lab file's target, TARGET of make user-data):"
	@python3 -c 'import json, pathlib; [print("  {target:10} {title}".format(**json.loads(p.read_text()))) for p in sorted(pathlib.Path("targets").glob("*/target.json"))]'
	@echo
	@echo "File systems (families/<fs>/family.json; FAMILY is the family):"
	@python3 -c 'import json, pathlib; [print("  {filesystem:8} family {family:7} {title}".format(**json.loads(p.read_text()))) for p in sorted(pathlib.Path("families").glob("*/family.json"))]'

deps: ## Install everything: the labs' and benchmarks' packages, the test and image tools, .venv; idempotent
	scripts/deps all

deps-test: ## Install what the labs and the offline tests need (make test runs it first)
	scripts/deps test

toolchain: ## Install the pinned benchmark toolchain with Spack (/opt/pfslab/view, view-seed); MIRROR=<bundle> BUNDLE_KEY=<fingerprint> installs offline
	MIRROR='$(MIRROR)' PFSLAB_BUNDLE_KEY='$(BUNDLE_KEY)' PFSLAB_TOOLCHAIN_FILESYSTEM='$(FILESYSTEM)' scripts/toolchain

tools: ## Without Spack: build IOR/mdtest 4.0.0 and 3.3.0 and IO500 from pinned commits (registry/tools.json) into build/tools; TOOLS_MIRROR=<dir> builds offline
	python3 -m pfslab.toolbuild $(if $(TOOLS_MIRROR),--mirror $(call sq,$(TOOLS_MIRROR)),)

smoke: ## Run every job of every lab (LABS="a b") at tiny scale here: the tools, versions and options the real run uses; fails naming the line (SMOKE_REQUIRE=ior,mdtest, SCRATCH=dir)
	$(PFSLAB) smoke $(foreach l,$(LABS),$(call sq,$(l))) $(if $(SCRATCH),--scratch $(call sq,$(SCRATCH)),) $(if $(SMOKE_REQUIRE),--require $(call sq,$(SMOKE_REQUIRE)),)

mirror: ## On a connected host: write the air-gapped bundle (sources, bootstrap, build cache) to MIRROR_OUT
	MIRROR_OUT='$(or $(MIRROR_OUT),build/spack-bundle)' scripts/mirror

lab-up: ## Bring up (or repair) lab LAB and wait until it is healthy (BRIDGE=, SUBNET= for a second local lab; OWNER=)
	PFSLAB_BRIDGE=$(call sq,$(BRIDGE)) PFSLAB_SUBNET=$(call sq,$(SUBNET)) OWNER=$(call sq,$(OWNER)) scripts/lab up $(call arg,$(LAB))

lab-down: ## Take the running lab down and prove nothing is left (PURGE=1: also what others tagged with the lab)
	PFSLAB_PURGE=$(call sq,$(PURGE)) scripts/lab down $(if $(filter command line,$(origin LAB)),$(call arg,$(LAB)),)

expired: ## List your cloud labs past their expiry tag that still hold resources (ALL=1: everyone's; REGIONS=)
	ALL=$(call sq,$(ALL)) REGIONS=$(call sq,$(REGIONS)) scripts/lab expired

lab-status: ## Show the running lab's nodes, roles, health and mounts
	scripts/lab status $(if $(filter command line,$(origin LAB)),$(call arg,$(LAB)),)

calibrate: ## Measure the running lab again on this machine (the probes its thresholds are floors of)
	scripts/lab calibrate $(if $(filter command line,$(origin LAB)),$(call arg,$(LAB)),)

bench: ## Run the running lab's workloads with ReFrame; keep the run under build/runs/
	scripts/bench $(REFRAME_ARGS)

user-data: ## Render LAB's cloud-init user-data for TARGET (default: the lab's target) into build/user-data/LAB
	scripts/render-user-data $(call arg,$(LAB)) $(or $(call arg,$(TARGET)),"$$($(PFSLAB) lab get $(call arg,$(LAB)) target)") $(call sq,build/user-data/$(LAB))

hosts-up: ## Start the hosts of lab HOSTS on this machine (system containers from the kit's image recipe; root)
	scripts/hosts up $(call arg,$(HOSTS))

hosts-down: ## Remove the hosts of lab HOSTS and prove nothing of them is left
	scripts/hosts down $(call arg,$(HOSTS))

hosts-status: ## Each host of lab HOSTS: running or off, address
	scripts/hosts status $(call arg,$(HOSTS))

remote-up: ## Resume the SSH bring-up (boot wait, cluster files, phases, preflight) of a provisioned cloud or bare-metal lab
	scripts/remote-up $(call arg,$(LAB))

images: ## Build server/client images with Packer: TARGET=qemu|aws|azure ROLE=server|client|all (FAMILY=<family>, FORCE=1)
	scripts/deps images
	scripts/images $(or $(TARGET),qemu) $(ROLE)

image-boot-test: ## Boot a qemu image to cloud-init's boot-finished: IMAGE=build/images/pfslab-server-ceph-<digest12> [USER_DATA=...]
	scripts/image-boot-test $(IMAGE) $(USER_DATA)

dry-run: ## Write the job scripts of labs that run elsewhere (LABS="a b", default: all), run nothing
	scripts/dry-run $(LABS)

report: ## HTML report and PNG plots of a run (RUN=<lab>/<timestamp>; default: the newest run)
	$(PFSLAB) report $(call arg,$(RUN))

compare: ## What changed from run A to run B (A=<lab>/<timestamp> B=...), noise taken into account
	@[[ -n $(call sq,$(A)) && -n $(call sq,$(B)) ]] || { echo "make compare needs two runs: A=<lab>/<timestamp> B=<lab>/<timestamp> (see build/runs/)" >&2; exit 2; }
	$(PFSLAB) compare $(call arg,$(A)) $(call arg,$(B))

baseline: ## Run the suite REPEAT times (default 3) and write the lab's references from the spread
	REPEAT=$(REPEAT) scripts/baseline $(REFRAME_ARGS)

overhead: ## IOR and fio by hand and through the kit, alternating (5 rounds): prints the kit/hand ratios
	scripts/bench-overhead

demo: ## The first command on a new machine: what the demo needs, the local lab, one test per tool, the verdict (TOOLS_MIRROR=<dir>: IOR/mdtest offline)
	TOOLS_MIRROR=$(call sq,$(TOOLS_MIRROR)) scripts/demo

test: deps-test ## All offline tests: pytest, bats, terraform, shellcheck, mypy, checkov (installs what they need)
	$(MAKE) --no-print-directory -j3 --output-sync=target test-python test-bats test-terraform lint checkov

test-python: ## Unit tests of the kit's Python code (parsers, labs, workloads, verdicts)
	$(PYTHON) -m pytest -q --durations=15 tests/unit

test-bats: ## Shell tests of the scripts and roles (bats)
	bats tests/bats

test-terraform: ## terraform fmt -check, validate and test of every provider-free module and root
	scripts/check-terraform

lint: ## shellcheck every shell script; mypy the Python package and the targets' modules (targets/*/*.py)
	scripts/lint

test-spack: ## Concretize the toolchain offline with a real Spack (SPACK_ROOT, SPACK_PYTHON with clingo, PFSLAB_SPACK_PACKAGES)
	$(PYTHON) -m pytest -q -s -rs tests/unit/test_spack_env.py

checkov: ## Static security checks of terraform/ and targets/ with checkov (own venv in build/checkov-venv); fails on any failed check
	scripts/checkov

lock: ## On a host that reaches PyPI: regenerate the hash-locked requirements*.lock from the pinned requirements*.txt
	scripts/lock-python

test-images: ## The qemu image for real: build + boot (root, Debian mirror; about 10-15 min under TCG)
	PFSLAB_TEST_IMAGES=1 bats tests/images

test-lab: ## The local lab for real from a clone at a random path: failed lab-ups undone, up, repair, demo, faults, down; two checkouts (root; CI runs it; TESTS='tests/lab/<file>.bats ...' runs those only)
	scripts/test-lab $(TESTS)

test-cloud: ## Terraform applied for real to an EC2 API emulator: lab-up, lab-down, killed applies, leftovers, expiry (CI runs it)
	timeout 1800 bats tests/cloud

test-remote: ## The remote path for real on hosts of this machine: faults named, lab-up, bench from the login host, report, lab-down, hosts-down (root; CI runs it)
	timeout 1800 bats tests/remote
