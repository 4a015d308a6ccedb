"""EC2's eventual consistency ("Eventual consistency in the Amazon EC2 API", EC2 API
reference): an instance id CreateFleet just returned may answer InvalidInstanceID.NotFound
for a while. Provision waits for it to record the private address; a teardown never reads
NotFound as "gone" unless the fleet's deletion already covers the instance."""

from __future__ import annotations

import json

from tests.runners.test_ec2_provider import Cloud, _moto, describe, load, placed  # noqa: F401

INSTANCE = "i-0123456789abcdef0"


def test_provision_waits_for_the_new_instance_to_be_visible_and_records_its_address():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-1")
    cloud.expect_fleet("us-east-1", {"Errors": [], "Instances": [placed("g6.xlarge",
                                                                        "us-east-1a")]})
    for _ in range(2):
        cloud.ec2("us-east-1").add_client_error("describe_instances",
                                                "InvalidInstanceID.NotFound")
    describe(cloud, "us-east-1", state="pending", ip="10.42.0.9")
    placement = cloud.provider.provision("run-ec", "us-east-1")
    cloud.verify()
    assert placement["private_ip"] == "10.42.0.9"
    assert len(cloud.sleeps) == 2  # backed off twice


def test_terminate_not_found_right_after_launch_is_retried_not_read_as_gone():
    cloud = Cloud(load("e2b-emb4-g6"))
    placement = {"region": "us-east-1", "fleet_id": "fleet-x", "instance_id": INSTANCE}
    ec2 = cloud.ec2("us-east-1")
    ec2.add_response("delete_fleets", {"SuccessfulFleetDeletions": [],
                                       "UnsuccessfulFleetDeletions": [{"FleetId": "fleet-x",
                                       "Error": {"Code": "unexpectedError", "Message": "m"}}]})
    ec2.add_client_error("terminate_instances", "InvalidInstanceID.NotFound")
    ec2.add_response("terminate_instances", {"TerminatingInstances": [
        {"InstanceId": INSTANCE, "CurrentState": {"Name": "shutting-down", "Code": 32}}]})
    outcome = cloud.provider.teardown(placement)
    cloud.verify()
    # the instance did terminate on the second try; the fleet's error is still retried
    assert outcome["state"] == "retry-later" and "TerminateInstances" not in outcome["message"]


def test_terminate_still_not_found_without_a_deleted_fleet_is_retried_later():
    cloud = Cloud(load("e2b-emb4-g6"))
    placement = {"region": "us-east-1", "instance_id": INSTANCE}
    for _ in range(6):
        cloud.ec2("us-east-1").add_client_error("terminate_instances",
                                                "InvalidInstanceID.NotFound")
    outcome = cloud.provider.teardown(placement)
    cloud.verify()
    assert outcome["state"] == "retry-later"
    assert "InvalidInstanceID.NotFound" in outcome["message"]
    json.dumps(outcome)
