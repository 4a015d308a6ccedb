"""While Creating, the SageMaker provider reads the container log for the first /ping
answered 200 and puts it in the Creating alert; at InService it keeps the engine's
start-up facts. CloudWatch Logs through Stubber, in the real FilterLogEvents shape."""

from __future__ import annotations

from datetime import timedelta

import botocore.session
import pytest
from botocore.stub import ANY, Stubber

from tests.runners.experiments import sagemaker_experiment
from tests.runners.fake_aws import mocked_aws
from tests.runners.sagemaker_world import RUN_ID, T0, World
from tests.telemetry.cloudwatch_fixtures import events_from_log


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch):
    with mocked_aws(monkeypatch, "us-east-1"):
        yield


def shifted_events(start_after: timedelta) -> list[dict]:
    """The fixture log's events, moved so that the first one is `start_after` past T0."""
    events = events_from_log()
    shift = int((T0 + start_after).timestamp() * 1000) - events[0]["timestamp"]
    return [{**e, "timestamp": e["timestamp"] + shift, "ingestionTime": e["ingestionTime"] + shift}
            for e in events]


class LoggedWorld(World):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.logs = botocore.session.get_session().create_client("logs", region_name="us-east-2")
        self.logs_stub = Stubber(self.logs)
        self.logs_stub.activate()

    def factory(self, service, region):
        return self.logs if service == "logs" else super().factory(service, region)

    def expect_log_read(self, events: list[dict]) -> None:
        group = f"/aws/sagemaker/Endpoints/{self.endpoint()}"
        start_ms = int(T0.timestamp() * 1000) - 60_000  # creation minus a minute of slack
        self.logs_stub.add_response(
            "filter_log_events", {"events": events},
            {"logGroupName": group, "startTime": start_ms, "limit": ANY})


def test_creating_endpoint_with_a_healthy_container_says_so_and_facts_come_at_inservice():
    world = LoggedWorld(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    provider = world.provider()
    world.expect_create("us-east-2")
    placement = provider.provision(RUN_ID, "us-east-2")

    events = shifted_events(timedelta(minutes=1))  # first /ping 200 at 01:03:05
    world.expect_describe("us-east-2", "Creating")
    world.expect_log_read([])  # nothing logged yet
    placement = provider.poll_ready(placement)["placement"]
    assert "container_healthy_at" not in placement

    world.clock.moment = T0 + timedelta(seconds=10)
    world.expect_describe("us-east-2", "Creating")  # within 30 s of the last read: no read
    placement = provider.poll_ready(placement)["placement"]

    world.clock.moment = T0 + timedelta(minutes=6)
    world.expect_describe("us-east-2", "Creating")
    world.expect_log_read(events[:17])
    looked = provider.poll_ready(placement)
    placement = looked["placement"]
    assert placement["container_healthy_at"] == "2026-12-03T01:03:05Z"
    assert looked["message"] == "Creating; container answering /ping 200 since 2026-12-03T01:03:05Z"
    (alert,) = world.alerts("us-east-2")
    assert "answered SageMaker's /ping with 200 since 2026-12-03T01:03:05Z (3 min)" in \
        alert["Message"]

    world.clock.moment = T0 + timedelta(minutes=7)
    world.expect_describe("us-east-2", "InService", placed="ml.g6.xlarge")
    world.expect_log_read(events)
    looked = provider.poll_ready(placement)
    assert looked["state"] == "ready"
    facts = looked["placement"]["engine_facts"]
    assert (facts["vllm_version"], facts["kv_cache_tokens"], facts["weights_gib"]) == (
        "0.30.0", 1_209_977, 2.86)
    assert facts["source"] == (f"engine log: CloudWatch Logs /aws/sagemaker/Endpoints/"
                               f"{world.endpoint()}")
    assert facts["stats"]["lines"] == 2  # a summary, small enough for Step Functions
    events_seen = [e["event"] for e in looked["placement"]["timeline"]]
    assert events_seen == ["create_requested", "creating", "container_healthy",
                           "creating_alert", "in_service"]
    world.logs_stub.assert_no_pending_responses()
    world.assert_all_stubs_used()


def test_an_unreadable_log_is_recorded_and_the_endpoint_still_becomes_ready():
    world = LoggedWorld(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    provider = world.provider()
    world.expect_create("us-east-2")
    placement = provider.provision(RUN_ID, "us-east-2")
    world.expect_describe("us-east-2", "InService", placed="ml.g6.xlarge")
    world.logs_stub.add_client_error("filter_log_events", "AccessDeniedException", "denied")
    looked = provider.poll_ready(placement)
    assert looked["state"] == "ready"
    assert looked["placement"]["engine_facts"]["missing"] == (
        f"no engine log: logs:FilterLogEvents on /aws/sagemaker/Endpoints/{world.endpoint()} "
        "denied")


def test_collect_telemetry_after_teardown_copies_the_log_and_the_metrics():
    world = LoggedWorld(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    cloudwatch = botocore.session.get_session().create_client("cloudwatch",
                                                              region_name="us-east-2")
    metrics_stub = Stubber(cloudwatch)
    metrics_stub.activate()
    factory = world.factory
    world.factory = lambda s, r: cloudwatch if s == "cloudwatch" else factory(s, r)
    provider = world.provider()
    world.expect_create("us-east-2")
    placement = provider.provision(RUN_ID, "us-east-2")
    events = shifted_events(timedelta(minutes=1))
    world.expect_log_read(events)
    metrics_stub.add_response("get_metric_data", {"MetricDataResults": [
        {"Id": "overhead_latency_ms", "Timestamps": [T0 + timedelta(minutes=8)],
         "Values": [241_000.0], "StatusCode": "Complete"}]})
    start_s = T0.timestamp()
    got = provider.collect_telemetry(placement, start_s, start_s + 900)
    lines = got["files"]["engine-log.jsonl"].decode().splitlines()
    assert len(lines) == len(events) and '"stream": "AllTraffic/i-0a1b2c3d4e5f60718"' in lines[0]
    import json
    metrics = json.loads(got["files"]["cloudwatch-metrics.json"])
    assert metrics["metrics"]["overhead_latency_ms"]["value"] == 241.0
    assert got["missing"] == {}
    metrics_stub.assert_no_pending_responses()
    world.logs_stub.assert_no_pending_responses()
