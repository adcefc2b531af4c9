"""``scripts/lab up [LAB]``: validate, provision (Terraform), repair, wait until healthy.

A local lab (the target's nodes are namespaces of this host): preflight, the lab recorded
as this checkout's before anything of it is made, Terraform's apply of the local root,
then the repair and health wait (pfslab/lifecycle/repair.py) and the calibration. A cloud
or bare-metal lab: credentials and providers checked before anything is created, apply,
then the SSH bring-up (pfslab/lifecycle/remote_up.py). A lab that is already there
(target site, provisions false): its adapter's checks only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from pfslab.lifecycle import Refusal, lock
from pfslab.lifecycle.adapter import Exit, Shell
from pfslab.lifecycle.labstate import Command, require_cmd, require_root, say, target_flags, use_target
from pfslab.lifecycle.terraform import (Terraform, deployment, expiry, lab_vars, providers_unavailable, said,
                                        ssh_key, stop_orphan_providers, tail)


def nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


# ---- Terraform roots ------------------------------------------------------------------

def local_terraform(cmd: Command, target: str) -> Terraform:
    lab = cmd.lab().name
    return Terraform(lab, cmd.kit.root / target_flags(target).terraform_root, cmd.kit.state_dir(lab), cmd.kit.root)


def cloud_root(cmd: Command, shell: Shell, lab: str, target: str) -> Path:
    """A remote target's root: its adapter's target_root, if it has one (bare metal: MAAS
    machines need the maas provider), else the target file's."""
    if shell.has("target_root"):
        return Path(shell.value("target_root", lab))
    return cmd.kit.root / target_flags(target).terraform_root


def cloud_terraform(cmd: Command, shell: Shell, lab: str, target: str) -> Terraform:
    return Terraform(lab, cloud_root(cmd, shell, lab, target), cmd.kit.state_dir(lab), cmd.kit.root)


def local_init(cmd: Command, tf: Terraform) -> None:
    tf.state_dir.mkdir(parents=True, exist_ok=True)
    if tf.data_dir.is_dir():
        return
    if tf.run(["init", "-input=false", f"-backend-config=path={tf.state}"],
              to=tf.state_dir / "terraform-init.log") != 0:
        raise Refusal(f"terraform init failed for lab {tf.lab}; see {tf.state_dir}/terraform-init.log")


def cloud_init(cmd: Command, tf: Terraform) -> None:
    """Providers installable: ``terraform init`` into build/<lab>/.terraform. On failure only
    the init log is kept (text, no secret); the half-made .terraform is removed."""
    if tf.data_dir.is_dir():
        return
    tf.state_dir.mkdir(parents=True, exist_ok=True)
    init_log = tf.state_dir / "terraform-init.log"
    if tf.run(["init", "-input=false", "-no-color", f"-backend-config=path={tf.state}"], to=init_log,
              stderr=subprocess.STDOUT) != 0:
        shutil.rmtree(tf.data_dir, ignore_errors=True)
        why = providers_unavailable(tf.root, init_log.read_text(errors="replace"), os.environ) or f"see {init_log}"
        root = str(tf.root).removeprefix(f"{cmd.kit.root}/")
        raise Refusal(f"lab {tf.lab}: terraform init failed in {root}: {why}; nothing was created "
                      f"(only {init_log} was written)")


def cloud_vars(cmd: Command, shell: Shell, lab: str, target: str) -> list[str]:
    resolved = cmd.lab()
    state_dir = cmd.kit.state_dir(lab)
    found = lab_vars(state_dir, resolved.path, cmd.kit.root)
    found += ["-var", f"ssh_public_key_file={ssh_key(state_dir, lab)}",
              "-var", f"expiry={expiry(state_dir, float(resolved.field(f'targets.{target}.expiry_hours')))}"]
    # The owner recorded at lab-up (pfslab/instance.py): every resource is tagged with it.
    found += ["-var", f"owner={resolved.text('instance.owner')}", "-var", f"deployment={deployment(state_dir)}"]
    if shell.has("target_tf_vars"):
        found += [ln for ln in shell.value("target_tf_vars", lab).split("\n") if ln]
    return found


# ---- preflight ------------------------------------------------------------------------

def preflight_local(cmd: Command) -> None:
    resolved = cmd.lab()
    lab = resolved.name
    require_root("make lab-up (local target)")
    if not Path("/dev/fuse").is_char_device():
        raise Refusal("/dev/fuse is missing; the lab's ceph-fuse clients need FUSE (load the fuse module or give "
                      "the container /dev/fuse)")
    require_cmd("terraform", "jq", "ip", "nsenter", "unshare", "findmnt", "ceph", "ceph-mon", "ceph-mgr",
                "ceph-osd", "ceph-mds", "ceph-fuse", "mpirun")
    # A lab with Slurm runs Debian's daemons in its namespaces (scripts/roles/slurm).
    scheduler = resolved.data.get("scheduler")
    if isinstance(scheduler, dict) and scheduler.get("type") == "slurm":
        require_cmd("slurmctld", "slurmd", "srun", "sinfo", "scontrol", "munged", "runuser")
        if subprocess.run(["id", "munge"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False).returncode != 0:
            raise Refusal(f"lab {lab} has Slurm but this host has no munge user; run 'make deps' (it installs munge)")
    # Another checkout's lab (or another local lab) on the same bridge, an overlapping
    # subnet or the same mount path would mix two clusters: refused, naming it.
    done = subprocess.run([cmd.kit.cli(), "lab", "collisions", str(resolved.path)], stdout=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode != 0:
        raise Refusal(done.stdout.split("\n", 1)[0])
    # A bridge that no lab of this kit that is up made (a kit older than the records, or
    # the site's own) is not ours to join either.
    bridge = resolved.text("targets.local.bridge")
    exists = subprocess.run(["ip", "link", "show", bridge], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            check=False).returncode == 0
    if exists and not nonempty(cmd.kit.state_dir(lab) / "terraform.tfstate"):
        raise Refusal(f"bridge {bridge} already exists and no lab of this checkout made it; take its lab down "
                      f"first, or give this lab another: make lab-up LAB={lab} BRIDGE=<name> SUBNET=<network> "
                      "(README: Two checkouts on one host)")


def preflight_cloud(cmd: Command, shell: Shell, target: str) -> None:
    lab = cmd.lab().name
    require_cmd("terraform", "jq", "ssh", "ssh-keygen", "scp")
    root = cloud_root(cmd, shell, lab, target)
    if not root.is_dir():
        raise Refusal(f"target '{target}' has no Terraform root ({root})")
    shell.call("target_credentials", lab, f"lab {lab}", "nothing was created")
    cloud_init(cmd, cloud_terraform(cmd, shell, lab, target))


# ---- calibration ----------------------------------------------------------------------

def calibrate(cmd: Command, lab: str, force: bool = False) -> None:
    """Measure what the lab can do on this machine (pfslab.calibration), once per lab
    instance or when asked (FORCE): its figures are judged against floors of these."""
    resolved = cmd.lab()
    file = cmd.kit.state_dir(lab) / "calibration.json"
    if resolved.field("benchmark.calibrate") is not True:
        return
    if not force and nonempty(file):
        say(f"calibration of lab {lab} kept from {json.loads(file.read_text()).get('measured_at')} "
            "('make calibrate' runs it again)")
        return
    cgroup = resolved.text("instance.cgroup")
    if Path(f"/sys/fs/cgroup/{cgroup}").exists() or Path(f"/sys/fs/cgroup/cpu/{cgroup}").exists():
        raise Refusal(f"lab {lab}'s daemons are throttled (scripts/throttle on): a calibration now would measure "
                      "the throttle; run 'scripts/throttle off' first")
    say(f"calibrating lab {lab} on this machine: fio probes through its first client "
        "(reframe/references/policy.yaml)")
    with subprocess.Popen([cmd.kit.cli(), "calibrate", lab], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            say(line.rstrip("\n"))
    if proc.returncode != 0:
        raise Exit(proc.returncode)
    say(f"calibration kept in {file}; every verdict of the lab shows it")


# ---- up -------------------------------------------------------------------------------

def checked_up(cmd: Command, shell: Shell) -> int:
    """A lab that is already there (target site): nothing is provisioned, installed,
    mounted or started, and nothing needs root; it becomes the active lab, and its lab-down
    gives the active mark back to the lab that had it."""
    resolved = cmd.lab()
    lab = resolved.name
    state_dir = cmd.kit.state_dir(lab)
    active = cmd.kit.recorded_lab()
    fresh = not nonempty(state_dir / "inventory.json")
    lock.take_or_refuse(cmd.kit.build, lab, "lab-up")
    say(f"checking lab {lab} (target {resolved.target}): nothing is installed or started, as "
        f"{subprocess.run(['id', '-un'], stdout=subprocess.PIPE, text=True, check=False).stdout.strip()}")
    if shell.run("target_up", lab, str(state_dir)) != 0:
        # A first lab-up that was refused leaves nothing behind (its lock file went in dir).
        if fresh:
            shutil.rmtree(state_dir, ignore_errors=True)
        raise Exit(2)
    shutil.copyfile(resolved.path, state_dir / "lab.json")
    if active and active != lab:
        (state_dir / "previous-active").write_text(f"{active}\n")
    cmd.kit.write_env(lab)
    say(f"lab {lab} is checked in {cmd.seconds()} s; inventory: {state_dir}/inventory.json; 'make lab-down' "
        "removes only the kit's scratch directory")
    return 0


def cloud_up(cmd: Command, shell: Shell, target: str) -> int:
    from pfslab.lifecycle import remote_up

    lab = cmd.lab().name
    state_dir = cmd.kit.state_dir(lab)
    Shell("", cmd.kit.root).call("login_refuse_running", lab)
    say(f"provisioning lab {lab} (target {target})")
    tf = cloud_terraform(cmd, shell, lab, target)
    variables = cloud_vars(cmd, shell, lab, target)
    # Recorded before anything is created: an apply killed part way leaves a lab that a
    # plain 'make lab-down' finds and removes.
    cmd.kit.active_file.write_text(f"{lab}\n")
    apply_log = state_dir / "terraform-apply.log"
    if tf.run(["apply", "-auto-approve", "-input=false", "-no-color", *variables], to=apply_log,
              stderr=subprocess.STDOUT) != 0:
        tail(apply_log)
        stop_orphan_providers(lab, state_dir)
        raise Refusal(f"terraform apply failed for lab {lab}; full log: {apply_log} ('make lab-down LAB={lab}' "
                      "removes what was created)")
    said(apply_log, r"^(Apply complete|No changes)")
    status = tf.output_to("inventory", state_dir / "inventory.json")
    if status != 0:
        raise Exit(status)
    # What a target's root outputs beyond the inventory (bare metal: existing hosts' boot scripts).
    if shell.has("target_applied"):
        shell.call("target_applied", lab, target, str(state_dir))
    cmd.kit.write_env(lab)
    if shell.has("target_emulated"):
        rc, emulated, _ = shell.output("target_emulated", lab)
        if rc == 0:
            say(f"{emulated.rstrip(chr(10))}, so the SSH bring-up (host keys, first boot, cluster files, roles, "
                "preflight, calibration) is skipped")
            say(f"lab {lab} is provisioned in {cmd.seconds()} s on {target}; inventory: {state_dir}/inventory.json; "
                "'make lab-down' removes it")
            return 0
    remote_up.remote_up(lab)
    remote_up.login_calibrate(lab)
    say(f"lab {lab} is up and healthy in {cmd.seconds()} s on {target}")
    say(f"inventory: {state_dir}/inventory.json; run benchmarks with 'make bench' or 'source {cmd.kit.env_file} "
        "&& reframe -c reframe/ -r'")
    return 0


def cmd_up(cmd: Command, lab: str | None) -> int:
    lab = lab or "local"
    resolved = cmd.resolve(lab)
    target = resolved.target
    shell = use_target(cmd.kit, target)
    flags = target_flags(target)
    if not flags.provisions:
        return checked_up(cmd, shell)
    # A cloud lab without credentials or provider stops here, before anything else.
    if not flags.namespaces:
        preflight_cloud(cmd, shell, target)
    active = cmd.kit.recorded_lab()
    if active and active != lab:
        raise Refusal(f"lab {active} is up; bring it down first ('make lab-down') or run with LAB={active}")
    # Locked once every check that refuses without making anything has passed.
    if not flags.namespaces:
        lock.take_or_refuse(cmd.kit.build, lab, "lab-up")
        return cloud_up(cmd, shell, target)
    preflight_local(cmd)
    lock.take_or_refuse(cmd.kit.build, lab, "lab-up")
    state_dir = cmd.kit.state_dir(lab)
    # The lab becomes this checkout's lab before anything of it is made: a lab-up that
    # fails at any later step leaves a lab that a plain 'make lab-down' finds.
    state_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(resolved.path, state_dir / "lab.json")
    cmd.kit.active_file.write_text(f"{lab}\n")
    tf = local_terraform(cmd, target)
    local_init(cmd, tf)
    say(f"provisioning lab {lab} (target {target})")
    variables = lab_vars(state_dir, resolved.path, cmd.kit.root)
    apply_log = state_dir / "terraform-apply.log"
    if tf.logged(["apply", "-auto-approve", "-input=false", *variables], apply_log) != 0:
        tail(apply_log)
        raise Refusal(f"terraform apply failed for lab {lab}; full log: {apply_log}")
    said(apply_log, r"^(Apply complete|No changes)")
    status = tf.output_to("inventory", state_dir / "inventory.json")
    if status != 0:
        raise Exit(status)
    cmd.kit.write_env(lab)
    timeout = resolved.text("targets.local.ready_timeout_s")
    # Repair what died, wait until healthy (exit 2 when not, saying why), and the cluster's
    # first health line (pfslab/lifecycle/repair.py).
    done = subprocess.run([cmd.kit.cli(), "health", "converge", lab, timeout], stdout=subprocess.PIPE, text=True,
                          check=False)
    if done.returncode != 0:
        raise Exit(done.returncode)
    say(f"lab {lab} is up and healthy in {cmd.seconds()} s: {done.stdout.rstrip(chr(10))}")
    calibrate(cmd, lab)
    say(f"inventory: {state_dir}/inventory.json; run benchmarks with 'make bench' or 'source {cmd.kit.env_file} "
        "&& reframe -c reframe/ -r'")
    return 0
