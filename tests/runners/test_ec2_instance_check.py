"""A dead EC2 instance ends the wait within one poll round: the control function (outside
the VPC) looks at the instance each round, which the in-VPC poller cannot (no route to the
EC2 API). The provider's look, and the state machine running it (moto's ASL interpreter)."""

from __future__ import annotations

import json

import pytest

from runners.providers.ec2.provider import Ec2Provider
from runners.workflow import execution as workflow
from tests.runners.test_ec2_provider import Cloud, _moto, describe, load  # noqa: F401
from tests.runners.test_workflow_execution import _execute, aws, benchmark_template  # noqa: F401

PLACEMENT = {"region": "us-east-1", "instance_id": "i-0123456789abcdef0", "port": 8000}


@pytest.mark.parametrize("state", ["terminated", "stopped", "shutting-down"])
def test_a_dead_instance_fails_the_check_with_its_state_reason(state):
    cloud = Cloud(load("e2b-emb4-g6"))
    describe(cloud, "us-east-1", state=state)
    look = cloud.provider.check_instance(PLACEMENT)
    cloud.verify()
    assert look["state"] == "failed"
    assert look["message"] == (f"instance i-0123456789abcdef0 is {state}: "
                               "Client.UserInitiatedShutdown")
    assert look["placement"]["instance_state"]["state"] == state


def test_a_live_instance_passes_and_its_address_is_recorded_for_the_in_vpc_poller():
    cloud = Cloud(load("e2b-emb4-g6"))
    describe(cloud, "us-east-1", state="pending", ip="10.42.0.11")
    look = cloud.provider.check_instance(PLACEMENT)
    assert look["state"] == "alive" and look["placement"]["private_ip"] == "10.42.0.11"
    assert "private_ip" not in PLACEMENT  # the caller's placement is not changed


def test_ec2_runs_the_check_on_the_control_function():
    exp = {"backend": "ec2", "ttl_hours": 3}
    assert workflow.limits(exp)["check_instance"] is True
    assert workflow.function_for(workflow.INSTANCE_CHECK, "ec2") == workflow.CONTROL_FUNCTION
    assert workflow.function_for("await_ready", "ec2") == workflow.DATA_FUNCTION


def test_the_workflow_ends_the_wait_in_the_round_the_instance_died(aws, monkeypatch):
    looks = []

    def check_instance(self, placement):
        looks.append(placement)
        if len(looks) < 2:
            return {"state": "alive", "placement": placement, "message": "instance running"}
        return {"state": "failed", "placement": {**placement, "instance_state": {
            "state": "terminated", "reason": "Server.SpotInstanceTermination"}},
            "message": "instance i-1 is terminated: Server.SpotInstanceTermination"}
    monkeypatch.setattr(Ec2Provider, "check_instance", check_instance)
    scenario, end = _execute(aws, monkeypatch, "ec2", limits=dict(max_polls=100),
                             waiting_polls=10_000)
    assert end["status"] == "FAILED" and end["error"] == "PlacementFailed"
    assert "Server.SpotInstanceTermination" in json.loads(end["cause"])["instance_state"][
        "reason"]
    # provision, the first look, one more look after the first check; then teardown
    assert scenario.names() == ["provision", "await_ready", "await_ready", "teardown"]
    assert len(looks) == 2
    used = {(fn, event["phase"]) for fn, event in aws["invocations"]}
    assert (workflow.CONTROL_FUNCTION, workflow.INSTANCE_CHECK) in used
    assert (workflow.DATA_FUNCTION, "await_ready") in used


def test_in_the_vpc_a_missing_address_waits_for_the_check_without_calling_ec2(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", workflow.DATA_FUNCTION)
    cloud = Cloud(load("e2b-emb4-g6"))
    look = cloud.provider.poll_ready(PLACEMENT)  # no DescribeInstances stubbed
    cloud.verify()
    assert look["state"] == "waiting" and "instance check" in look["message"]
