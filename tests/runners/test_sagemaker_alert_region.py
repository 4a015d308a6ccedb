"""The Creating alert of an endpoint in a fallback region goes to the home region's topic:
the only one the control role may publish to (stacks/benchmark.py grant_publish) and the
one someone subscribed to."""

from __future__ import annotations

import pytest

from tests.runners.experiments import sagemaker_experiment
from tests.runners.fake_aws import mocked_aws
from tests.runners.sagemaker_world import RUN_ID, World


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch):
    with mocked_aws(monkeypatch, "us-east-2"):
        yield


@pytest.mark.parametrize("how", ["argument", "lambda environment"])
def test_the_alert_of_a_fallback_region_goes_to_the_home_topic(monkeypatch, how):
    world = World(sagemaker_experiment(regions=["us-east-2", "us-east-1"]),
                  deployed=("us-east-2", "us-east-1"))
    if how == "argument":
        provider = world.provider(home_region="us-east-2")
    else:
        monkeypatch.setenv("AWS_REGION", "us-east-2")  # Lambda sets it to its own region
        provider = world.provider()
    world.expect_describe("us-east-1", "Creating")
    placement = {"region": "us-east-1", "endpoint_name": world.endpoint(), "run_id": RUN_ID,
                 "provision_started_at": "2026-12-03T00:00:00Z", "alerted": False,
                 "timeline": []}
    world.clock.sleep(3600)
    outcome = provider.poll_ready(placement)
    assert outcome["state"] == "waiting"
    assert outcome["placement"]["timeline"][-1]["event"] == "creating_alert"
    assert outcome["placement"]["timeline"][-1]["topic_region"] == "us-east-2"
    (alert,) = world.alerts("us-east-2")
    assert "us-east-1" in alert["Message"]
    assert world.alerts("us-east-1") == []
