"""The watchdog finds instant fleets the way EC2 really lists them: DescribeFleets without
FleetIds leaves instant fleets out (EC2 API reference), so moto's listing, which returns
them, cannot show the difference; botocore Stubber answers as EC2 does."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from runners import tags
from runners.watchdog.inventory import Ec2Fleets

FLEET = "fleet-0123456789abcdef0"
MAINTAIN = "fleet-0fedcba9876543210"


def _fleet(fleet_id, kind):
    return {"FleetId": fleet_id, "Type": kind, "FleetState": "active",
            "Tags": [{"Key": tags.MANAGED, "Value": "true"}]}


def test_instant_fleets_are_found_by_their_tags_then_described_by_id():
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_response("describe_tags", {"Tags": [
        {"ResourceId": FLEET, "ResourceType": "fleet", "Key": tags.MANAGED, "Value": "true"}]},
        {"Filters": [{"Name": "resource-type", "Values": ["fleet"]},
                     {"Name": "key", "Values": [tags.MANAGED]},
                     {"Name": "value", "Values": ["true"]}]})
    stub.add_response("describe_fleets", {"Fleets": [_fleet(FLEET, "instant")]},
                      {"FleetIds": [FLEET]})
    # the unfiltered listing: what EC2 returns without ids (no instant fleet)
    stub.add_response("describe_fleets", {"Fleets": [_fleet(MAINTAIN, "maintain")]}, {})
    with stub:
        found = list(Ec2Fleets().find(ec2, "us-east-1"))
    stub.assert_no_pending_responses()
    assert [r.id for r in found] == [FLEET, MAINTAIN]
    assert found[0].state == "active" and found[0].tags[tags.MANAGED] == "true"
