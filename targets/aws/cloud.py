"""What an AWS lab holds, asked of EC2 itself: the commands ``pfslab aws whoami|expired|
leftovers|sweep`` that the adapter (``targets/aws/adapter.sh``) runs. target.json names
this file (``"python": "cloud.py"``); ``pfslab.registry.target_module`` imports it from
here and ``pfslab`` gives it its subcommand. Only a command that runs imports boto3.

``make lab-down`` proves a lab is gone by listing, type by type, every EC2 resource
tagged with the lab and its owner (instances that are not terminated, Elastic IPs,
network interfaces, volumes, placement groups, security groups, key pairs, and the VPC
pieces: route tables, internet gateways, subnets, VPCs). EC2's own describe calls
answer at once after a deletion and cover every type the adapter creates; the Resource
Groups Tagging API does neither.

Whose a leftover is comes from the ``deployment`` tag, a random id the kit draws at a
lab's first lab-up (``build/<lab>/deployment``) and puts on everything Terraform
creates for it. What carries it and is still there after ``terraform destroy`` was
made by this lab's lab-up and lost from the state (an apply killed part way): the sweep
removes it. What carries the lab's tags but not that id was made by someone else, and
is only reported unless the user asks for it to go too (``PURGE=1``).

``PFSLAB_AWS_ENDPOINT`` names an EC2 API emulator to ask instead of AWS (the kit's tests).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pfslab.errors import KitError

#: The environment variable naming an EC2 API emulator.
ENDPOINT_ENV = "PFSLAB_AWS_ENDPOINT"


class AwsError(KitError):
    """A failed AWS call or bad input, said in one line."""


@dataclass(frozen=True)
class Resource:
    """One tagged EC2 resource: its kind (as EC2 names resource types), id, tags and
    what deleting it needs to know (attachments, associations)."""

    kind: str
    id: str
    tags: dict[str, str] = field(default_factory=dict, compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        return self.tags.get("Name", "")

    def line(self) -> str:
        return f"{self.kind} {self.id}" + (f" ({self.name})" if self.name else "")


def endpoint(environ: dict[str, str] | None = None) -> str | None:
    """The emulator URL from PFSLAB_AWS_ENDPOINT (None: AWS itself), checked."""
    value = (os.environ if environ is None else environ).get(ENDPOINT_ENV, "")
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path not in {"", "/"} or parts.query or parts.username:
        raise AwsError(f"{ENDPOINT_ENV}={value!r} is not allowed; give the http(s) URL of an EC2 API emulator, host and port only (e.g. http://127.0.0.1:41901)")
    return value.rstrip("/")


def client(service: str, region: str, url: str | None = None) -> Any:
    """A boto3 client of ``service`` in ``region``, at the emulator when one is named."""
    import boto3

    return boto3.session.Session().client(service, region_name=region, endpoint_url=url or endpoint())


def _tag_dict(tags: Iterable[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or []}


def _filters(tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{k}", "Values": [v]} for k, v in sorted(tags.items())]


def _pages(ec2: Any, operation: str, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    if ec2.can_paginate(operation):
        for page in ec2.get_paginator(operation).paginate(**kwargs):
            yield from page.get(key, [])
    else:
        yield from getattr(ec2, operation)(**kwargs).get(key, [])


def _instances(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for reservation in _pages(ec2, "describe_instances", "Reservations", Filters=flt):
        for i in reservation["Instances"]:
            if i["State"]["Name"] != "terminated":
                yield Resource("instance", i["InstanceId"], _tag_dict(i.get("Tags")), {"state": i["State"]["Name"]})


def _addresses(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for a in ec2.describe_addresses(Filters=flt).get("Addresses", []):
        yield Resource("elastic-ip", a["AllocationId"], _tag_dict(a.get("Tags")), {"association": a.get("AssociationId")})


def _interfaces(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for n in _pages(ec2, "describe_network_interfaces", "NetworkInterfaces", Filters=flt):
        yield Resource("network-interface", n["NetworkInterfaceId"], _tag_dict(n.get("TagSet")),
                       {"attachment": (n.get("Attachment") or {}).get("AttachmentId"), "status": n.get("Status")})


def _volumes(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for v in _pages(ec2, "describe_volumes", "Volumes", Filters=flt):
        yield Resource("volume", v["VolumeId"], _tag_dict(v.get("Tags")), {"state": v.get("State")})


def _placement_groups(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for g in ec2.describe_placement_groups(Filters=flt).get("PlacementGroups", []):
        yield Resource("placement-group", g["GroupName"], _tag_dict(g.get("Tags")))


def _security_groups(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for g in _pages(ec2, "describe_security_groups", "SecurityGroups", Filters=flt):
        # A VPC's default group cannot be deleted; it goes with its VPC.
        if g["GroupName"] != "default":
            yield Resource("security-group", g["GroupId"], _tag_dict(g.get("Tags")))


def _key_pairs(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for k in ec2.describe_key_pairs(Filters=flt).get("KeyPairs", []):
        yield Resource("key-pair", k["KeyPairId"], _tag_dict(k.get("Tags")) | {"Name": k["KeyName"]})


def _route_tables(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for r in _pages(ec2, "describe_route_tables", "RouteTables", Filters=flt):
        associations = r.get("Associations", [])
        # A VPC's main route table goes with its VPC.
        if not any(a.get("Main") for a in associations):
            yield Resource("route-table", r["RouteTableId"], _tag_dict(r.get("Tags")),
                           {"associations": [a["RouteTableAssociationId"] for a in associations]})


def _internet_gateways(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for g in _pages(ec2, "describe_internet_gateways", "InternetGateways", Filters=flt):
        yield Resource("internet-gateway", g["InternetGatewayId"], _tag_dict(g.get("Tags")),
                       {"vpcs": [a["VpcId"] for a in g.get("Attachments", [])]})


def _subnets(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for s in _pages(ec2, "describe_subnets", "Subnets", Filters=flt):
        yield Resource("subnet", s["SubnetId"], _tag_dict(s.get("Tags")))


def _vpcs(ec2: Any, flt: list[dict[str, Any]]) -> Iterator[Resource]:
    for v in _pages(ec2, "describe_vpcs", "Vpcs", Filters=flt):
        yield Resource("vpc", v["VpcId"], _tag_dict(v.get("Tags")))


#: Every kind the sweep knows, in the order they can be deleted (what holds on to
#: something comes before it).
LISTERS: tuple[Callable[[Any, list[dict[str, Any]]], Iterator[Resource]], ...] = (
    _instances, _addresses, _interfaces, _volumes, _placement_groups, _security_groups,
    _key_pairs, _route_tables, _internet_gateways, _subnets, _vpcs,
)
KINDS = ("instance", "elastic-ip", "network-interface", "volume", "placement-group", "security-group",
         "key-pair", "route-table", "internet-gateway", "subnet", "vpc")


def tagged(ec2: Any, tags: dict[str, str]) -> list[Resource]:
    """Every resource carrying all of ``tags``, in deletion order."""
    flt = _filters(tags)
    return [r for lister in LISTERS for r in lister(ec2, flt)]


# ---- deleting ---------------------------------------------------------------------------

#: Errors that mean "not yet": a dependency still being released after a deletion.
_TRANSIENT = {"DependencyViolation", "InvalidPlacementGroup.InUse", "IncorrectState", "InvalidNetworkInterface.InUse", "VolumeInUse"}
#: Errors that mean "already gone".
_GONE_SUFFIX = (".NotFound", ".Unknown")


def _error_code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _delete_one(ec2: Any, r: Resource) -> None:
    if r.kind == "instance":
        ec2.terminate_instances(InstanceIds=[r.id])
    elif r.kind == "elastic-ip":
        if r.extra.get("association"):
            ec2.disassociate_address(AssociationId=r.extra["association"])
        ec2.release_address(AllocationId=r.id)
    elif r.kind == "network-interface":
        if r.extra.get("attachment") and r.extra.get("status") == "in-use":
            ec2.detach_network_interface(AttachmentId=r.extra["attachment"], Force=True)
        ec2.delete_network_interface(NetworkInterfaceId=r.id)
    elif r.kind == "volume":
        ec2.delete_volume(VolumeId=r.id)
    elif r.kind == "placement-group":
        ec2.delete_placement_group(GroupName=r.id)
    elif r.kind == "security-group":
        ec2.delete_security_group(GroupId=r.id)
    elif r.kind == "key-pair":
        ec2.delete_key_pair(KeyPairId=r.id)
    elif r.kind == "route-table":
        for association in r.extra.get("associations", []):
            ec2.disassociate_route_table(AssociationId=association)
        ec2.delete_route_table(RouteTableId=r.id)
    elif r.kind == "internet-gateway":
        for vpc in r.extra.get("vpcs", []):
            ec2.detach_internet_gateway(InternetGatewayId=r.id, VpcId=vpc)
        ec2.delete_internet_gateway(InternetGatewayId=r.id)
    elif r.kind == "subnet":
        ec2.delete_subnet(SubnetId=r.id)
    elif r.kind == "vpc":
        ec2.delete_vpc(VpcId=r.id)
    else:
        raise AwsError(f"resource kind {r.kind!r} is not one the sweep deletes; allowed: {', '.join(KINDS)}")


def _wait_terminated(ec2: Any, ids: list[str], delay: float, attempts: int) -> None:
    for _ in range(attempts):
        flt = [{"Name": "instance-id", "Values": ids}]
        states = {i["InstanceId"]: i["State"]["Name"]
                  for res in _pages(ec2, "describe_instances", "Reservations", Filters=flt) for i in res["Instances"]}
        if all(states.get(i, "terminated") == "terminated" for i in ids):
            return
        time.sleep(delay)
    raise AwsError(f"instances {', '.join(ids)} did not terminate within {delay * attempts:.0f} s")


def delete(ec2: Any, resources: list[Resource], say: Callable[[str], None],
           delay: float = 5.0, attempts: int = 60) -> None:
    """Delete ``resources`` (as ``tagged`` lists them) in dependency order, waiting for
    instances to terminate and retrying what EC2 still holds on to."""
    instances = [r.id for r in resources if r.kind == "instance"]
    for r in resources:
        if r.kind == "instance":
            _delete_one(ec2, r)
            say(f"terminating {r.line()}")
    if instances:
        _wait_terminated(ec2, instances, delay, attempts)
    for r in resources:
        if r.kind == "instance":
            continue
        say(_delete_retrying(ec2, r, delay, attempts))


def _delete_retrying(ec2: Any, r: Resource, delay: float, attempts: int) -> str:
    """Delete one resource, waiting out what EC2 still holds on to; say what happened."""
    from botocore.exceptions import ClientError

    for attempt in range(attempts):
        try:
            _delete_one(ec2, r)
            return f"removed {r.line()}"
        except ClientError as exc:
            code = _error_code(exc)
            if code.endswith(_GONE_SUFFIX):
                # A root volume goes with its instance, a default route with its table.
                return f"{r.line()} was gone already"
            if code not in _TRANSIENT or attempt == attempts - 1:
                raise AwsError(f"could not delete {r.line()}: {_one_line(exc)}") from exc
            time.sleep(delay)
    raise AwsError(f"could not delete {r.line()} in {attempts} attempts")


# ---- a lab's leftovers ----------------------------------------------------------------------

@dataclass(frozen=True)
class Leftovers:
    """What a lab still holds: made by this lab's lab-up (``own``) or not (``foreign``)."""

    own: list[Resource]
    foreign: list[Resource]


def is_resolved_lab(lab: dict[str, Any]) -> bool:
    """A lab resolved for AWS with its instance block (pfslab lab show LAB --instance):
    what the sweep and the leftover check need. This module is part of the AWS target's
    folder, so it alone may know the target's name."""
    return lab.get("target") == "aws" and "instance" in lab


def lab_tags(lab: dict[str, Any]) -> dict[str, str]:
    """The tags that say a resource is this lab's and this owner's (a resolved lab)."""
    return {"lab": str(lab["name"]), "owner": str(lab["instance"]["owner"])}


def leftovers(ec2: Any, lab: dict[str, Any], deployment: str | None) -> Leftovers:
    found = tagged(ec2, lab_tags(lab))
    own = [r for r in found if deployment and r.tags.get("deployment") == deployment]
    return Leftovers(own=own, foreign=[r for r in found if r not in own])


def region_of(lab: dict[str, Any]) -> str:
    return str(lab["targets"]["aws"]["region"])


# ---- expired labs ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ExpiredLab:
    lab: str
    owner: str
    expiry: str
    region: str
    kinds: dict[str, int]

    def line(self, now: dt.datetime) -> str:
        hours = (now - parse_time(self.expiry)).total_seconds() / 3600
        held = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in self.kinds.items())
        return (f"lab {self.lab} (owner {self.owner}, {self.region}) expired at {self.expiry}, {hours:.1f} h ago, "
                f"and still holds {held}: make lab-down LAB={self.lab}")


def parse_time(value: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise AwsError(f"expiry tag {value!r} is not an RFC 3339 time such as 2026-11-30T18:00:00Z") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def expired(resources: Iterable[Resource], region: str, now: dt.datetime) -> list[ExpiredLab]:
    """Labs whose expiry tag lies before ``now``, with what each still holds. Resources
    without a readable expiry are not judged (the kit tags every one it makes)."""
    labs: dict[tuple[str, str, str], dict[str, int]] = {}
    for r in resources:
        expiry = r.tags.get("expiry", "")
        try:
            if not expiry or parse_time(expiry) >= now:
                continue
        except AwsError:
            continue
        kinds = labs.setdefault((r.tags.get("lab", "?"), r.tags.get("owner", "?"), expiry), {})
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    return [ExpiredLab(lab, owner, expiry, region, kinds) for (lab, owner, expiry), kinds in sorted(labs.items())]


# ---- what the command line runs ----------------------------------------------------------

def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def guarded(what: str, call: Callable[[], Any]) -> Any:
    """Run AWS calls; a botocore failure becomes one AwsError line naming ``what``."""
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

    try:
        return call()
    except NoCredentialsError as exc:
        raise AwsError(f"{what}: no AWS credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID, or run 'aws configure')") from exc
    except EndpointConnectionError as exc:
        raise AwsError(f"{what}: AWS could not be reached ({_one_line(exc)})") from exc
    except (BotoCoreError, ClientError) as exc:
        raise AwsError(f"{what}: {_one_line(exc)}") from exc


def whoami(region: str) -> str:
    """The caller's ARN (STS GetCallerIdentity): the credentials work."""
    sts = client("sts", region)
    return str(guarded("checking the AWS credentials", lambda: sts.get_caller_identity())["Arn"])


def lab_leftovers(lab: dict[str, Any], deployment: str | None) -> Leftovers:
    ec2 = client("ec2", region_of(lab))
    return guarded(f"listing what lab {lab['name']} holds", lambda: leftovers(ec2, lab, deployment))  # type: ignore[no-any-return]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def state_ids(path: str) -> set[str]:
    """Every id a Terraform state file records, wherever it stands: a resource's own id
    and those inside it (an instance's root volume is an attribute of the instance). A
    missing file records none."""
    try:
        state = json.loads(open(path, encoding="utf-8").read())
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        raise AwsError(f"Terraform state {path} is unreadable ({exc})") from exc
    return {text for res in state.get("resources", []) for inst in res.get("instances", [])
            for text in _strings(inst.get("attributes", {}))}


def sweep(lab: dict[str, Any], deployment: str | None, purge: bool, say: Callable[[str], None],
          state: str | None = None, delay: float = 5.0, attempts: int = 60) -> None:
    """Remove what this lab's lab-up made and the Terraform state lost (with ``purge``,
    everything tagged with the lab and owner too). With ``state``, only what that state
    file does not record: run before ``terraform destroy``, it takes away what holds on to
    the state's own resources (an instance using an interface the state has)."""
    ec2 = client("ec2", region_of(lab))
    found = guarded(f"listing what lab {lab['name']} holds", lambda: leftovers(ec2, lab, deployment))
    doomed = found.own + (found.foreign if purge else [])
    if state is not None:
        known = state_ids(state)
        doomed = [r for r in doomed if r.id not in known]
    doomed.sort(key=lambda r: KINDS.index(r.kind))
    if doomed:
        guarded(f"removing what lab {lab['name']} left", lambda: delete(ec2, doomed, say, delay, attempts))


def expired_labs(regions: Iterable[str], owner: str | None, now: dt.datetime) -> list[ExpiredLab]:
    """Every lab of ``owner`` (None: anyone's) in ``regions`` whose expiry tag is past."""
    found: list[ExpiredLab] = []
    for region in sorted(set(regions)):
        ec2 = client("ec2", region)
        tags = {"pfslab": "managed"} | ({"owner": owner} if owner else {})
        resources = guarded(f"listing the kit's resources in {region}", lambda: tagged(ec2, tags))
        found.extend(expired(resources, region, now))
    return found


# ---- pfslab aws ------------------------------------------------------------------------------

#: The line `pfslab --help` shows for `pfslab aws`.
HELP = "ask EC2 what a lab holds: credentials, leftovers, sweep, expired labs"


def add_commands(parser: argparse.ArgumentParser) -> None:
    """The actions of `pfslab aws` (the registry gives this module its subparser)."""
    parser.description = "EC2 itself, type by type (PFSLAB_AWS_ENDPOINT: an EC2 API emulator instead)."
    cmds = parser.add_subparsers(dest="aws_command", required=True, metavar="ACTION")
    w = cmds.add_parser("whoami", help="the caller's ARN: the credentials work")
    w.add_argument("--region", default="us-east-1")
    for name, text in (("leftovers", "list what is tagged with the lab and its owner, one per line"),
                       ("sweep", "remove what this lab's lab-up made and the Terraform state lost (--purge: all the lab's)")):
        c = cmds.add_parser(name, help=text)
        c.add_argument("lab_json", help="the lab as lab-up resolved it (build/<lab>/lab.json)")
        c.add_argument("--deployment", help="the lab's deployment id (build/<lab>/deployment)")
        if name == "sweep":
            c.add_argument("--purge", action="store_true", help="remove what others made with the lab's tags too")
            c.add_argument("--state", help="remove only what this Terraform state file does not record (before a destroy)")
    e = cmds.add_parser("expired", help="labs past their expiry tag that still hold resources")
    e.add_argument("--region", action="append", required=True, help="a region to look in (repeatable)")
    e.add_argument("--all-owners", action="store_true", help="everyone's labs, not only the user's")


def read_lab(path: str) -> dict[str, Any]:
    """A resolved lab file (build/<lab>/lab.json) of an AWS lab with its instance block."""
    try:
        lab: dict[str, Any] = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise AwsError(f"{path} is not a readable resolved lab ({exc})") from exc
    if not isinstance(lab, dict) or not is_resolved_lab(lab):
        raise AwsError(f"{path} is not a lab resolved for target aws with its instance (pfslab lab show LAB --instance)")
    return lab


def run(args: argparse.Namespace) -> int:
    """Run the `pfslab aws` action ``args`` names; failures raise AwsError (one line, exit 2)."""
    if args.aws_command == "whoami":
        print(whoami(args.region))
        return 0
    if args.aws_command == "expired":
        from pfslab import instance

        owner = None if args.all_owners else instance.owner()
        now = dt.datetime.now(dt.timezone.utc)
        found = expired_labs(args.region, owner, now)
        for expired_lab in found:
            print(expired_lab.line(now))
        who = "anyone" if owner is None else f"owner {owner}"
        print(f"{len(found)} expired lab(s) of {who} in {', '.join(sorted(set(args.region)))}", file=sys.stderr)
        return 0
    lab = read_lab(args.lab_json)
    if args.aws_command == "sweep":
        sweep(lab, args.deployment, args.purge, lambda line: print(line, flush=True), args.state)
        return 0
    left = lab_leftovers(lab, args.deployment)
    for r in left.own:
        print(f"{r.line()}: made by this lab's lab-up, not in the Terraform state")
    for r in left.foreign:
        print(f"{r.line()}: tagged lab={lab['name']} owner={lab['instance']['owner']} but not made by this lab's lab-up")
    return 0
