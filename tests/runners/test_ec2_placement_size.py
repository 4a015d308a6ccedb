"""The placement the workflow carries stays under the task result cap (8 KiB) however many
overrides EC2 refuses: the first two types x six AZs with EC2's full messages already took
7.8 KiB, so a third type failed the run after its instance launched."""

from __future__ import annotations

import dataclasses
import json

from botocore.stub import ANY

from runners.providers.ec2 import fleet as ec2_fleet
from runners.workflow import execution as workflow
from runners.workflow.lambda_handler import _checked_size, _placement_status
from tests.runners.test_ec2_provider import Cloud, _moto, load, placed  # noqa: F401

AZS = [f"us-east-1{letter}" for letter in "abcdef"]
TYPES = ["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.8xlarge"]


def _message(itype, az):
    # EC2's wording for an on-demand capacity refusal (API reference, error codes)
    others = ", ".join(a for a in AZS if a != az)
    return (f"We currently do not have sufficient {itype} capacity in the Availability Zone "
            f"you requested ({az}). Our system will be working on provisioning additional "
            f"capacity. You can currently get {itype} capacity by not specifying an "
            f"Availability Zone in your request or choosing {others}.")


def _provision_refused_everywhere_but_last():
    base = load("e2b-emb4-g6")
    exp = dataclasses.replace(base, ec2=dataclasses.replace(base.ec2, instance_types=tuple(TYPES)))
    cloud = Cloud(exp)
    ssm = cloud.client("ssm", "us-east-1")
    ssm.put_parameter(Name=f"/benchstack/ec2/{exp.name}/launch-templates", Overwrite=True,
                      Value=json.dumps({t: f"lt-0123456789abcdef{i}" for i, t in
                                        enumerate(TYPES)}), Type="String")
    ssm.put_parameter(Name=ec2_fleet.SUBNETS_PARAMETER, Type="String", Overwrite=True,
                      Value=",".join(f"subnet-0{az[-1]}{'0' * 15}" for az in AZS))
    ec2 = cloud.ec2("us-east-1")
    ec2.add_response("describe_subnets", {"Subnets": [
        {"SubnetId": f"subnet-0{az[-1]}{'0' * 15}", "AvailabilityZone": az} for az in AZS]},
        {"SubnetIds": ANY})
    ec2.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [
        {"InstanceType": t, "LocationType": "availability-zone", "Location": az}
        for t in TYPES for az in AZS]}, {"LocationType": "availability-zone", "Filters": ANY})
    last = (TYPES[-1], AZS[-1])
    errors = [{"LaunchTemplateAndOverrides": {"Overrides": {
        "InstanceType": t, "SubnetId": f"subnet-0{az[-1]}{'0' * 15}"}},
        "Lifecycle": "on-demand", "ErrorCode": "InsufficientInstanceCapacity",
        "ErrorMessage": _message(t, az)} for t in TYPES for az in AZS if (t, az) != last]
    hit = placed(*last)
    hit["LaunchTemplateAndOverrides"]["Overrides"]["SubnetId"] = f"subnet-0f{'0' * 15}"
    cloud.expect_fleet("us-east-1", {"Errors": errors, "Instances": [hit]})
    return cloud.provider.provision("20261203T001500Z-abc123", "us-east-1")


def test_a_placement_after_many_refusals_fits_the_workflow_state():
    placement = _provision_refused_everywhere_but_last()
    size = len(json.dumps(placement, separators=(",", ":")).encode())
    assert size <= ec2_fleet.PLACEMENT_MAX_BYTES
    answer = {"state": "done", "outcome": "placed", "updates": {"placement": placement},
              "key": "runs/2026-12-03-e2b-emb4-g6/20261203T001500Z-abc123/provision.json",
              "error": "x" * 1000}
    result = _placement_status("provision", answer)
    assert _checked_size("provision", result) == result  # under MAX_RESULT_BYTES
    assert workflow.MAX_RESULT_BYTES == 8 * 1024
    # every refused type and zone is still named
    named = {w for r in placement["refused"] for w in r.get("where", [])} | {
        f"{r['instance_type']}@{r['az']}" for r in placement["refused"] if "az" in r}
    assert named == {f"{t}@{az}" for t in TYPES for az in AZS} - {f"{TYPES[-1]}@{AZS[-1]}"}
    assert placement["instance_type"] == TYPES[-1]
    assert placement["tried"][0] == "g6.xlarge@us-east-1a"


def test_messages_are_kept_while_they_fit():
    small = {"tried": [], "skipped": [], "refused": [
        {"instance_type": "g6.xlarge", "az": "us-east-1a", "subnet_id": "subnet-1",
         "code": "InsufficientInstanceCapacity", "kind": "capacity", "message": "not now"}]}
    assert ec2_fleet.compact(small)["refused"] == small["refused"]
