"""An EC2 API emulator for the kit's cloud tests: moto's server, plus what moto lacks.

Runs in its own virtual environment (scripts/cloud-emulator makes it from
requirements-emulator.lock), never in the kit's .venv. It listens on 127.0.0.1 only.

moto 5.2 answers what it does not implement with a 500 (NotImplementedError), and the
AWS provider retries that for ever. Two such gaps are on the kit's path, added here as
EC2 has them:
- MonitorInstances and UnmonitorInstances (the adapter turns detailed monitoring on):
  the instance's monitoring state is set and returned.
- The interface type of a network interface (efa for EFA): moto records "interface"
  whatever was asked.
- Network interfaces that outlive their instance (the adapter makes every node's
  interfaces itself, so they are not deleted on termination): EC2 detaches them when
  the instance terminates; moto keeps them attached, and the provider's destroy then
  fails to detach a primary interface.
- Placement groups (every lab is in a cluster placement group): create (with tags), describe (ids, names, filters on name,
strategy, state and tags), delete (refused while a running instance is in the group),
RunInstances with Placement.GroupName (refused for a group that does not exist, and
recorded on the instance, so DescribeInstances shows it as EC2 does).

AMIs named as the labs' images (targets.aws.images.*.name) are registered at start, as a
site's Packer builds would have left them (--image-name, once per name).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.ec2 import ec2_backends
from moto.ec2 import utils as ec2_utils
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.instances import Instance
from moto.ec2.responses import EC2Response
from moto.ec2.responses.instances import InstanceResponse
from moto.ec2.utils import random_id
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

PREFIX = "pg"


class EmulatorError(EC2ClientError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


@dataclass
class PlacementGroup:
    group_name: str
    strategy: str
    group_id: str = field(default_factory=lambda: random_id(prefix=PREFIX, size=17))
    state: str = "available"
    partition_count: int | None = None


# (account, region) -> name -> group. One lock: the server handles requests in threads.
_GROUPS: dict[tuple[str, str], dict[str, PlacementGroup]] = {}
_LOCK = threading.Lock()


def _groups(response: Any) -> dict[str, PlacementGroup]:
    return _GROUPS.setdefault((response.current_account, response.region), {})


def _describe(response: Any, group: PlacementGroup) -> dict[str, Any]:
    tags = response.ec2_backend.tags.get(group.group_id, {})
    return {
        "GroupName": group.group_name,
        "GroupId": group.group_id,
        "Strategy": group.strategy,
        "State": group.state,
        "GroupArn": f"arn:aws:ec2:{response.region}:{response.current_account}:placement-group/{group.group_name}",
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        **({"PartitionCount": group.partition_count} if group.partition_count else {}),
    }


def _matches(response: Any, group: PlacementGroup, filters: dict[str, list[str]]) -> bool:
    tags = response.ec2_backend.tags.get(group.group_id, {})
    for name, values in filters.items():
        if name == "group-name":
            value: str | None = group.group_name
        elif name == "group-id":
            value = group.group_id
        elif name == "strategy":
            value = group.strategy
        elif name == "state":
            value = group.state
        elif name == "tag-key":
            if not set(values) & set(tags):
                return False
            continue
        elif name.startswith("tag:"):
            value = tags.get(name[4:])
        else:
            raise EmulatorError("InvalidParameterValue", f"The filter '{name}' is invalid")
        if value not in values:
            return False
    return True


def _in_use(response: Any, name: str) -> bool:
    return any(
        instance.placement.group_name == name and instance.state != "terminated"
        for instance in response.ec2_backend.all_instances()
    )


def create_placement_group(self: Any) -> ActionResult:
    name = self._get_param("GroupName")
    strategy = self._get_param("Strategy")
    if not name or strategy not in {"cluster", "spread", "partition"}:
        raise EmulatorError("InvalidParameterValue", f"GroupName and a Strategy of cluster, spread or partition are required (got {name!r}, {strategy!r})")
    tags = self._parse_tag_specification("placement-group").get("placement-group", {})
    self.error_on_dryrun()
    with _LOCK:
        groups = _groups(self)
        if name in groups:
            raise EmulatorError("InvalidPlacementGroup.Duplicate", f"The Placement Group '{name}' already exists.")
        group = PlacementGroup(group_name=name, strategy=strategy, partition_count=self._get_int_param("PartitionCount"))
        groups[name] = group
    if tags:
        self.ec2_backend.create_tags([group.group_id], tags)
    return ActionResult({"PlacementGroup": _describe(self, group)})


def describe_placement_groups(self: Any) -> ActionResult:
    names = self._get_param("GroupNames", [])
    ids = self._get_param("GroupIds", [])
    filters = self._filters_from_querystring()
    with _LOCK:
        groups = list(_groups(self).values())
    found = [g for g in groups if (not names or g.group_name in names) and (not ids or g.group_id in ids)]
    missing = (set(names) - {g.group_name for g in found}) | (set(ids) - {g.group_id for g in found})
    if missing:
        raise EmulatorError("InvalidPlacementGroup.Unknown", f"The Placement Group '{sorted(missing)[0]}' is unknown.")
    return ActionResult({"PlacementGroups": [_describe(self, g) for g in found if _matches(self, g, filters)]})


def delete_placement_group(self: Any) -> EmptyResult:
    name = self._get_param("GroupName")
    self.error_on_dryrun()
    with _LOCK:
        groups = _groups(self)
        if name not in groups:
            raise EmulatorError("InvalidPlacementGroup.Unknown", f"The Placement Group '{name}' is unknown.")
        if _in_use(self, name):
            raise EmulatorError("InvalidPlacementGroup.InUse", f"The Placement Group '{name}' is in use and cannot be deleted.")
        group = groups.pop(name)
    self.ec2_backend.tags.pop(group.group_id, None)
    return EmptyResult()


_run_instances = InstanceResponse.run_instances


def run_instances(self: Any) -> ActionResult:
    name = self._get_param("Placement.GroupName")
    if name:
        with _LOCK:
            if name not in _groups(self):
                raise EmulatorError("InvalidPlacementGroup.Unknown", f"The Placement Group '{name}' is unknown.")
    result = _run_instances(self)
    if name:
        for instance in result.result.instances:  # type: ignore[attr-defined]
            instance.placement.group_name = name
    return result


def _set_monitoring(self: Any, state: str) -> ActionResult:
    ids = self._get_param("InstanceIds", [])
    self.error_on_dryrun()
    for instance_id in ids:
        self.ec2_backend.get_instance_by_id(instance_id).monitoring_state = state
    return ActionResult({"InstanceMonitorings": [{"InstanceId": i, "Monitoring": {"State": state}} for i in ids]})


def monitor_instances(self: Any) -> ActionResult:
    return _set_monitoring(self, "enabled")


def unmonitor_instances(self: Any) -> ActionResult:
    return _set_monitoring(self, "disabled")


_create_network_interface = EC2Response.create_network_interface
INTERFACE_TYPES = {"interface", "efa", "efa-only", "trunk"}


def create_network_interface(self: Any) -> ActionResult:
    kind = self._get_param("InterfaceType") or "interface"
    if kind not in INTERFACE_TYPES:
        raise EmulatorError("InvalidParameterValue", f"Value ({kind}) for parameter interfaceType is invalid; allowed: {', '.join(sorted(INTERFACE_TYPES))}")
    result = _create_network_interface(self)
    result.result["NetworkInterface"].interface_type = kind  # type: ignore[index]
    return result


_terminate = Instance.terminate


def terminate(self: Any) -> Any:
    survivors = [nic for nic in self.nics.values() if not nic.delete_on_termination]
    state = _terminate(self)
    # The interface's side of a detach only: the terminated instance keeps its record
    # of them (moto derives its private address from it).
    for nic in survivors:
        nic.instance = None
        nic.attachment_id = None
        nic.attach_time = None
        nic.status = "available"
        nic.device_index = None
    return state


def install_gaps() -> None:
    ec2_utils.EC2_RESOURCE_TO_PREFIX["placement-group"] = PREFIX
    ec2_utils.EC2_PREFIX_TO_RESOURCE[PREFIX] = "placement-group"
    EC2Response.create_placement_group = create_placement_group  # type: ignore[attr-defined]
    EC2Response.describe_placement_groups = describe_placement_groups  # type: ignore[attr-defined]
    EC2Response.delete_placement_group = delete_placement_group  # type: ignore[attr-defined]
    EC2Response.run_instances = run_instances  # type: ignore[method-assign]
    Instance.terminate = terminate  # type: ignore[method-assign]
    EC2Response.create_network_interface = create_network_interface  # type: ignore[method-assign]
    EC2Response.monitor_instances = monitor_instances  # type: ignore[method-assign]
    EC2Response.unmonitor_instances = unmonitor_instances  # type: ignore[method-assign]


def register_images(account: str, regions: list[str], names: list[str]) -> None:
    """Register an AMI per name in each region, owned by the account (owners = self)."""
    for region in regions:
        backend = ec2_backends[account][region]
        for name in names:
            backend.register_image(name=name, description=f"pfslab emulator image {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ready-file", required=True, help="written with the endpoint URL once it answers")
    parser.add_argument("--region", action="append", default=[], help="a region to register the images in (repeatable)")
    parser.add_argument("--image-name", action="append", default=[], help="an AMI name to register (repeatable)")
    parser.add_argument("--account", default="123456789012", help="moto's default account (the fake credentials' account)")
    args = parser.parse_args()

    install_gaps()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    register_images(args.account, args.region or ["us-east-1"], args.image_name)
    url = f"http://{host}:{port}"
    with open(args.ready_file, "w", encoding="utf-8") as ready:
        ready.write(url + "\n")
    print(f"EC2 API emulator (moto, placement groups added) at {url}", flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
