"""targets/aws/cloud.py without AWS: what counts as a lab's leftover, whose it is, the
order things are deleted in, what an expired lab is, which emulator URLs are taken; and
`pfslab aws`, the commands the module gives its target, which import boto3 only when
one of them runs.

The module is loaded as the kit loads it, through the registry (target.json's python).
The same code runs against an EC2 API for real in tests/cloud (make test-cloud)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from pfslab import cli, registry

#: targets/aws/cloud.py as the registry imports it (its classes are read at run time).
aws: Any = registry.target_module(registry.targets()["aws"])
KIT = Path(__file__).resolve().parents[2]

LAB = {"name": "aws-cephfs", "target": "aws", "instance": {"owner": "alice"}, "targets": {"aws": {"region": "us-east-1"}}}
MINE = {"lab": "aws-cephfs", "owner": "alice", "deployment": "0123456789abcdef"}


def tags(**extra: str) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in (MINE | extra).items()]


class FakeEc2:
    """Answers the describe calls from fixed data and records every other call; a call
    may fail with a ClientError code a given number of times first."""

    def __init__(self, data: dict[str, list[dict[str, Any]]], fail: dict[str, list[str]] | None = None) -> None:
        self.data = data
        self.fail = fail or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.filters: list[Any] = []

    def can_paginate(self, _: str) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        def call(**kwargs: Any) -> dict[str, Any]:
            if name.startswith("describe_"):
                return self._describe(name, kwargs.get("Filters") or [])
            self.calls.append((name, kwargs))
            codes = self.fail.get(name, [])
            if codes:
                code = codes.pop(0)
                raise ClientError({"Error": {"Code": code, "Message": f"{code} (fake)"}}, name)
            return {}
        return call

    def _describe(self, name: str, filters: list[dict[str, Any]]) -> dict[str, Any]:
        if filters and filters[0]["Name"] == "instance-id":
            # The wait for termination: what was terminated is terminated at once.
            ids = filters[0]["Values"]
            return {"Reservations": [{"Instances": [{"InstanceId": i, "State": {"Name": "terminated"}} for i in ids]}]}
        self.filters.append(filters)
        keys = {
            "describe_instances": "Reservations", "describe_addresses": "Addresses",
            "describe_network_interfaces": "NetworkInterfaces", "describe_volumes": "Volumes",
            "describe_placement_groups": "PlacementGroups", "describe_security_groups": "SecurityGroups",
            "describe_key_pairs": "KeyPairs", "describe_route_tables": "RouteTables",
            "describe_internet_gateways": "InternetGateways", "describe_subnets": "Subnets", "describe_vpcs": "Vpcs",
        }
        return {keys[name]: self.data.get(name, [])}


def account() -> dict[str, list[dict[str, Any]]]:
    return {
        "describe_instances": [{"Instances": [
            {"InstanceId": "i-run", "State": {"Name": "running"}, "Tags": tags(Name="pfslab-aws-cephfs-cli0")},
            {"InstanceId": "i-gone", "State": {"Name": "terminated"}, "Tags": tags()},
        ]}],
        "describe_volumes": [{"VolumeId": "vol-stray", "State": "available", "Tags": tags(deployment="ffffffffffffffff")}],
        "describe_security_groups": [{"GroupId": "sg-lab", "GroupName": "pfslab-aws-cephfs", "Tags": tags()},
                                     {"GroupId": "sg-default", "GroupName": "default", "Tags": tags()}],
        "describe_route_tables": [{"RouteTableId": "rtb-main", "Associations": [{"Main": True, "RouteTableAssociationId": "a0"}], "Tags": tags()},
                                  {"RouteTableId": "rtb-lab", "Associations": [{"Main": False, "RouteTableAssociationId": "a1"}], "Tags": tags()}],
        "describe_vpcs": [{"VpcId": "vpc-lab", "Tags": tags()}],
        "describe_key_pairs": [{"KeyPairId": "key-1", "KeyName": "pfslab-aws-cephfs", "Tags": tags()}],
        "describe_internet_gateways": [{"InternetGatewayId": "igw-1", "Attachments": [{"VpcId": "vpc-lab"}], "Tags": tags()}],
    }


def test_leftovers_are_the_labs_and_owners_resources_split_by_deployment() -> None:
    ec2 = FakeEc2(account())
    found = aws.leftovers(ec2, LAB, MINE["deployment"])
    # Terminated instances, a VPC's default group and main route table are not leftovers.
    assert [r.id for r in found.own] == ["i-run", "sg-lab", "key-1", "rtb-lab", "igw-1", "vpc-lab"]
    assert [r.id for r in found.foreign] == ["vol-stray"]
    # Every type was asked with both tags: another owner's lab of the same name is not this one.
    assert len(ec2.filters) == len(aws.KINDS)
    assert all(f == [{"Name": "tag:lab", "Values": ["aws-cephfs"]}, {"Name": "tag:owner", "Values": ["alice"]}] for f in ec2.filters)


def test_without_a_deployment_id_nothing_is_the_kits_own() -> None:
    found = aws.leftovers(FakeEc2(account()), LAB, None)
    assert found.own == [] and len(found.foreign) == 7


def test_delete_terminates_instances_first_then_frees_what_they_held() -> None:
    ec2 = FakeEc2(account())
    found = aws.leftovers(ec2, LAB, MINE["deployment"])
    said: list[str] = []
    aws.delete(ec2, found.own, said.append, delay=0, attempts=3)
    names = [name for name, _ in ec2.calls]
    assert names == ["terminate_instances", "delete_security_group", "delete_key_pair", "disassociate_route_table",
                     "delete_route_table", "detach_internet_gateway", "delete_internet_gateway", "delete_vpc"]
    assert ec2.calls[3][1] == {"AssociationId": "a1"}
    assert said[0] == "terminating instance i-run (pfslab-aws-cephfs-cli0)"
    assert said[-1] == "removed vpc vpc-lab"


def test_delete_waits_out_a_dependency_and_says_what_was_gone_already() -> None:
    ec2 = FakeEc2(account(), fail={"delete_security_group": ["DependencyViolation", "DependencyViolation"],
                                   "delete_key_pair": ["InvalidKeyPair.NotFound"]})
    found = aws.leftovers(ec2, LAB, MINE["deployment"])
    said: list[str] = []
    aws.delete(ec2, [r for r in found.own if r.kind in {"security-group", "key-pair"}], said.append, delay=0, attempts=3)
    assert [n for n, _ in ec2.calls].count("delete_security_group") == 3
    assert said == ["removed security-group sg-lab", "key-pair key-1 (pfslab-aws-cephfs) was gone already"]


def test_delete_stops_in_one_line_on_what_cannot_be_waited_out() -> None:
    ec2 = FakeEc2(account(), fail={"delete_vpc": ["UnauthorizedOperation"]})
    vpc = [r for r in aws.leftovers(ec2, LAB, MINE["deployment"]).own if r.kind == "vpc"]
    with pytest.raises(aws.AwsError, match=r"^could not delete vpc vpc-lab: .*UnauthorizedOperation"):
        aws.delete(ec2, vpc, lambda _: None, delay=0, attempts=3)
    ec2 = FakeEc2(account(), fail={"delete_vpc": ["DependencyViolation"] * 3})
    with pytest.raises(aws.AwsError, match="DependencyViolation"):
        aws.delete(ec2, vpc, lambda _: None, delay=0, attempts=3)


def test_state_ids_are_every_id_the_state_records(tmp_path: Path) -> None:
    state = tmp_path / "terraform.tfstate"
    state.write_text(json.dumps({"resources": [
        {"type": "aws_instance", "instances": [{"attributes": {"id": "i-1", "root_block_device": [{"volume_id": "vol-1"}]}},
                                               {"attributes": {"id": "i-2"}}]},
        {"type": "aws_key_pair", "instances": [{"attributes": {"id": "pfslab-x", "key_pair_id": "key-9"}}]},
        {"type": "aws_ami", "mode": "data", "instances": [{"attributes": {}}]},
    ]}))
    assert {"i-1", "vol-1", "i-2", "pfslab-x", "key-9"} <= aws.state_ids(str(state))
    assert "i-3" not in aws.state_ids(str(state))
    assert aws.state_ids(str(tmp_path / "none")) == set()
    state.write_text("{not json")
    with pytest.raises(aws.AwsError, match="unreadable"):
        aws.state_ids(str(state))


NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)


def resource(kind: str, lab: str, owner: str, expiry: str) -> aws.Resource:
    return aws.Resource(kind, f"{kind}-{lab}-{expiry}", {"lab": lab, "owner": owner, "expiry": expiry})


def test_expired_labs_are_grouped_with_what_they_still_hold() -> None:
    found = aws.expired([
        resource("instance", "old", "alice", "2026-11-25T02:00:00Z"),
        resource("volume", "old", "alice", "2026-11-25T02:00:00Z"),
        aws.Resource("volume", "v2", {"lab": "old", "owner": "alice", "expiry": "2026-11-25T02:00:00Z"}),
        resource("instance", "fresh", "alice", "2026-11-25T18:00:00Z"),
        resource("instance", "odd", "alice", "tomorrow"),
        aws.Resource("instance", "i-untagged", {"lab": "none", "owner": "alice"}),
    ], "us-east-1", NOW)
    assert len(found) == 1
    assert found[0].kinds == {"instance": 1, "volume": 2}
    assert found[0].line(NOW) == ("lab old (owner alice, us-east-1) expired at 2026-11-25T02:00:00Z, 10.0 h ago, "
                                  "and still holds 1 instance, 2 volumes: make lab-down LAB=old")


def test_an_expiry_exactly_now_is_not_past() -> None:
    assert aws.expired([resource("instance", "x", "a", "2026-11-25T12:00:00Z")], "r", NOW) == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:41901", "https://emulator.example:4566/", "http://localhost:5000"])
def test_emulator_urls_taken(url: str) -> None:
    assert aws.endpoint({aws.ENDPOINT_ENV: url}) == url.rstrip("/")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/ec2", "127.0.0.1:5000", "http://user:pw@127.0.0.1:5000", "http://127.0.0.1:5000/x?y=1"])
def test_emulator_urls_refused_in_one_line_naming_them(url: str) -> None:
    with pytest.raises(aws.AwsError) as err:
        aws.endpoint({aws.ENDPOINT_ENV: url})
    assert f"PFSLAB_AWS_ENDPOINT={url!r} is not allowed" in str(err.value) and "\n" not in str(err.value)


def test_no_emulator_means_aws_itself() -> None:
    assert aws.endpoint({}) is None and aws.endpoint({aws.ENDPOINT_ENV: ""}) is None


# ---- pfslab aws ---------------------------------------------------------------------------------

def test_the_registry_loads_the_module_from_the_targets_folder_once() -> None:
    target = registry.targets()["aws"]
    assert target.module == registry.TARGETS_DIR / "aws" / "cloud.py"
    assert registry.target_module(target) is aws
    assert aws.__file__ == str(target.module)


def test_pfslab_aws_is_the_modules_parser(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli.build_parser(["aws"]).parse_args(["aws", "sweep", "lab.json", "--deployment", "d1", "--purge"])
    assert (args.command, args.aws_command, args.lab_json, args.deployment, args.purge, args.state) == \
        ("aws", "sweep", "lab.json", "d1", True, None)
    assert args.handler is aws.run
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser(["aws"]).parse_args(["aws", "expired"])
    assert exit_.value.code == 2 and "--region" in capsys.readouterr().err


def test_pfslab_aws_refuses_a_lab_of_another_target_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab.json"
    lab.write_text(json.dumps({**LAB, "target": "azure"}))
    assert cli.main(["aws", "leftovers", str(lab)]) == 2
    assert capsys.readouterr().err == (f"pfslab aws: {lab} is not a lab resolved for target aws with its instance "
                                       "(pfslab lab show LAB --instance)\n")
    assert cli.main(["aws", "sweep", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pfslab aws: {tmp_path / 'none.json'} is not a readable resolved lab") and err.count("\n") == 1


def test_pfslab_aws_leftovers_prints_each_with_whose_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab.json"
    lab.write_text(json.dumps(LAB))
    monkeypatch.setattr(aws, "client", lambda service, region: FakeEc2(account()))
    assert cli.main(["aws", "leftovers", str(lab), "--deployment", MINE["deployment"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "instance i-run (pfslab-aws-cephfs-cli0): made by this lab's lab-up, not in the Terraform state"
    assert out[-1] == "volume vol-stray: tagged lab=aws-cephfs owner=alice but not made by this lab's lab-up"
    assert len(out) == 7


def boto_modules_after(argv: list[str]) -> list[str]:
    """The boto3/botocore modules a fresh interpreter holds after `pfslab ARGV`."""
    code = ("import sys\nfrom pfslab import cli\ntry:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # No credentials anywhere, and no instance metadata to ask: whoami fails at once, offline.
    env |= {"PFSLAB_ROOT": str(KIT), "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
    ran = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=env)
    return list(json.loads(ran.stdout.splitlines()[-1].replace("'", '"')))


@pytest.mark.parametrize("argv", [["--help"], ["aws", "--help"], ["aws", "sweep", "--help"], ["lab", "list"]])
def test_the_command_line_imports_boto3_only_when_an_aws_command_runs(argv: list[str]) -> None:
    assert boto_modules_after(argv) == []


def test_the_probe_sees_boto3_where_an_aws_command_runs() -> None:
    # whoami without credentials: one line, exit 2, after boto3 was imported.
    assert "boto3" in boto_modules_after(["aws", "whoami"])


def test_a_target_named_as_one_of_pfslabs_commands_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    clash = dataclasses.replace(registry.targets()["aws"], target="lab")
    monkeypatch.setattr(registry, "targets", lambda: {"lab": clash})
    assert cli.main(["--help"]) == 2
    assert capsys.readouterr().err == "pfslab: targets/lab/target.json: python: 'pfslab lab' is already one of pfslab's own commands\n"
