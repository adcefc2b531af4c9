"""What the EC2 API itself says, for the cloud tests: run with the emulator's Python
(boto3 comes with moto), independently of the kit's own listing (targets/aws/cloud.py).

    ec2_query.py tagged k=v [k=v ...]     every resource carrying the tags: "<type> <id>"
    ec2_query.py run CODE                 run CODE with `ec2` (a client) and `json` bound

Endpoint and region from PFSLAB_AWS_ENDPOINT and AWS_DEFAULT_REGION.
"""

from __future__ import annotations

import json
import os
import sys

import boto3

ec2 = boto3.client("ec2", endpoint_url=os.environ["PFSLAB_AWS_ENDPOINT"], region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))


def tagged(tags: dict[str, str]) -> list[str]:
    f = [{"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()]
    found = [f"instance {i['InstanceId']}" for r in ec2.describe_instances(Filters=f)["Reservations"]
             for i in r["Instances"] if i["State"]["Name"] != "terminated"]
    found += [f"volume {v['VolumeId']}" for v in ec2.describe_volumes(Filters=f)["Volumes"]]
    found += [f"network-interface {n['NetworkInterfaceId']}" for n in ec2.describe_network_interfaces(Filters=f)["NetworkInterfaces"]]
    found += [f"elastic-ip {a['AllocationId']}" for a in ec2.describe_addresses(Filters=f)["Addresses"]]
    found += [f"security-group {g['GroupId']}" for g in ec2.describe_security_groups(Filters=f)["SecurityGroups"]]
    found += [f"placement-group {g['GroupName']}" for g in ec2.describe_placement_groups(Filters=f)["PlacementGroups"]]
    found += [f"key-pair {k['KeyName']}" for k in ec2.describe_key_pairs(Filters=f)["KeyPairs"]]
    found += [f"vpc {v['VpcId']}" for v in ec2.describe_vpcs(Filters=f)["Vpcs"]]
    found += [f"subnet {s['SubnetId']}" for s in ec2.describe_subnets(Filters=f)["Subnets"]]
    found += [f"route-table {t['RouteTableId']}" for t in ec2.describe_route_tables(Filters=f)["RouteTables"]]
    found += [f"internet-gateway {g['InternetGatewayId']}" for g in ec2.describe_internet_gateways(Filters=f)["InternetGateways"]]
    return found


def main() -> int:
    if sys.argv[1] == "tagged":
        print("\n".join(tagged(dict(a.split("=", 1) for a in sys.argv[2:]))))
    elif sys.argv[1] == "run":
        exec(sys.argv[2], {"ec2": ec2, "json": json})  # noqa: S102 (the test's own code)
    else:
        raise SystemExit(f"unknown action {sys.argv[1]!r}; allowed: tagged, run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
