"""The SageMaker provider and the region-fallback driver against a fake AWS: Stubber for
SageMaker (pools, capacity and Creating states moto cannot produce), moto for SSM/SNS/SQS."""

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from runners import providers, tags
from runners.backends.aws_runtime import runtime_client
from runners.backends.sagemaker_runtime import SageMakerRuntimeClient
from runners.providers import region_fallback
from runners.providers.base import ProvisionError
from runners.providers.sagemaker import names
from runners.providers.sagemaker.provider import SageMakerProvider
from tests.runners.experiments import sagemaker_experiment
from tests.runners.fake_aws import mocked_aws
from tests.runners.hub_fixtures import w4a16_model
from tests.runners.sagemaker_world import CAPACITY, HEALTH_CHECK, RUN_ID, T0, World


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch):
    with mocked_aws(monkeypatch, "us-east-1"):
        yield


def _place(world, provider=None, **overrides):
    provider = provider or world.provider()
    options = dict(ready_timeout_s=provider.ready_timeout_s, poll_interval_s=60,
                   teardown_timeout_s=600, teardown_interval_s=60, sleep=world.clock.sleep)
    options.update(overrides)
    return region_fallback.place(provider, RUN_ID, world.experiment.regions, **options)


def _events(timeline):
    return [e["event"] for e in timeline]


def test_the_registry_builds_the_sagemaker_provider():
    world = World(sagemaker_experiment(), deployed=())
    provider = providers.for_experiment(world.experiment, client_factory=world.factory)
    assert isinstance(provider, SageMakerProvider)


def test_a_capacity_failure_in_region_1_places_the_endpoint_in_region_2():
    world = World(sagemaker_experiment(), deployed=("us-east-2", "us-east-1"))
    world.expect_create("us-east-2")
    world.expect_describe("us-east-2", "Creating")
    world.expect_describe("us-east-2", "Failed", reason=CAPACITY)
    world.expect_delete("us-east-2")
    world.expect_create("us-east-1", created_at=T0.replace(minute=1))
    world.expect_describe("us-east-1", "Creating")
    world.expect_describe("us-east-1", "InService", placed="ml.g6.2xlarge")

    placement = _place(world)

    world.assert_all_stubs_used()  # us-west-2 was never asked for anything
    assert placement["region"] == "us-east-1"
    assert placement["instance_type"] == "ml.g6.2xlarge"  # the priority-2 pool
    assert placement["image"]["resolved"].startswith(
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm@sha256:")
    assert placement["endpoint_config_name"] == "cfg-us-east-1"
    assert placement["ready_at"] == "2026-12-03T01:02:00Z"
    assert _events(placement["timeline"]) == ["create_requested", "creating", "in_service"]
    (refused,) = placement["refused"]
    assert (refused["region"], refused["kind"], refused["teardown"]) == (
        "us-east-2", "capacity", "deleted")
    assert CAPACITY in refused["message"]
    assert _events(refused["timeline"]) == ["create_requested", "creating", "failed",
                                            "delete_requested"]
    assert placement["preflight"]["ignore_list"] == "checked"
    assert json.loads(json.dumps(placement)) == placement  # carried between Lambda states


def test_the_endpoint_is_created_from_the_stacks_config_with_the_billable_tags():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_create("us-east-2")  # Stubber checks name, config name and every tag
    placement = world.provider().provision(RUN_ID, "us-east-2")
    world.assert_all_stubs_used()
    assert placement["endpoint_name"] == names.endpoint_name("sm-test", RUN_ID)
    assert placement["tags"] == {tags.MANAGED: "true", tags.EXPERIMENT: "sm-test",
                                 tags.RUN_ID: RUN_ID, tags.EXPIRES_AT: "2026-12-03T04:00:00Z"}


def test_a_workflow_run_tags_its_execution_so_the_watchdog_sees_when_it_ended():
    arn = "arn:aws:states:us-east-2:123456789012:execution:benchstack-benchmark:" + RUN_ID
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_create("us-east-2", execution_arn=arn)
    placement = world.provider(execution_arn=arn).provision(RUN_ID, "us-east-2")
    world.assert_all_stubs_used()
    assert placement["tags"][tags.EXECUTION_ARN] == arn


def test_quota_stops_the_run_without_trying_the_next_region():
    world = World(sagemaker_experiment(), deployed=("us-east-2", "us-east-1"))
    message = ("The account-level service limit 'ml.g6.xlarge for endpoint usage' is 0 "
               "Instances, with current utilization of 0 Instances and a request delta of 1 "
               "Instances.")
    world.stubs["us-east-2"].add_client_error("create_endpoint", "ResourceLimitExceeded", message)
    world.expect_delete("us-east-2", gone=True)  # teardown runs on every path

    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world)

    world.assert_all_stubs_used()
    assert caught.value.kind == ProvisionError.QUOTA
    assert str(caught.value) == message
    (refused,) = caught.value.detail["refused"]
    assert (refused["region"], refused["kind"], refused["teardown"]) == (
        "us-east-2", "quota", "deleted")


def test_a_model_that_fails_its_health_check_stops_the_run_and_is_deleted():
    world = World(sagemaker_experiment(), deployed=("us-east-2", "us-east-1"))
    world.expect_create("us-east-2")
    world.expect_describe("us-east-2", "Failed", reason=HEALTH_CHECK)
    world.expect_delete("us-east-2")

    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world)

    world.assert_all_stubs_used()
    assert caught.value.kind == ProvisionError.FATAL
    assert HEALTH_CHECK in str(caught.value)
    assert f"container log: /aws/sagemaker/Endpoints/{world.endpoint()}" in str(caught.value)
    assert [r["region"] for r in caught.value.detail["refused"]] == ["us-east-2"]


def test_every_region_out_of_capacity_is_a_capacity_failure_listing_each_attempt():
    world = World(sagemaker_experiment(regions=["us-east-2", "us-east-1"]),
                  deployed=("us-east-2", "us-east-1"))
    for region in ("us-east-2", "us-east-1"):
        world.expect_create(region, created_at=world.clock.now())
        world.expect_describe(region, "Failed", reason="CapacityError: Unable to provision "
                              "requested ML compute capacity. Please retry using a different "
                              "ML instance type.")
        world.expect_delete(region)
    # the second create happens after the first attempt's one poll, no sleeps in between
    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world)
    world.assert_all_stubs_used()
    assert caught.value.kind == ProvisionError.CAPACITY
    assert str(caught.value) == "no capacity in any region tried (us-east-2, us-east-1)"
    assert [(r["region"], r["kind"]) for r in caught.value.detail["refused"]] == [
        ("us-east-2", "capacity"), ("us-east-1", "capacity")]


def test_a_stuck_creating_endpoint_raises_the_alert_and_is_deleted_once_it_leaves_creating():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_create("us-east-2")
    for _ in range(11):  # 600 s of waiting, one look a minute
        world.expect_describe("us-east-2", "Creating")
    world.expect_delete("us-east-2", refused=True)  # still Creating: refused
    world.expect_delete("us-east-2", refused=True)
    world.expect_delete("us-east-2")  # it left Creating: accepted

    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world, ready_timeout_s=600)

    world.assert_all_stubs_used()
    (alert,) = world.alerts("us-east-2")  # exactly one, at the 5-minute threshold
    assert alert["Subject"] == f"benchstack: {world.endpoint()} Creating for 5 min"
    assert "cannot be deleted until it leaves Creating" in alert["Message"]
    assert caught.value.kind == ProvisionError.FATAL
    assert "not ready after 600 s" in str(caught.value)
    (refused,) = caught.value.detail["refused"]
    assert refused["teardown"] == "deleted"
    assert caught.value.detail["pending_teardown"] == []
    timeline = refused["timeline"]
    assert _events(timeline) == ["create_requested", "creating", "creating_alert",
                                 "delete_refused", "delete_refused", "delete_requested"]
    alert_event = timeline[2]
    assert (alert_event["at"], alert_event["waited_s"]) == ("2026-12-03T01:05:00Z", 300)


def test_a_delete_still_refused_at_the_deadline_is_reported_not_dropped():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_create("us-east-2")
    world.expect_describe("us-east-2", "Creating")
    world.expect_describe("us-east-2", "Creating")
    for _ in range(3):
        world.expect_delete("us-east-2", refused=True)

    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world, ready_timeout_s=60, teardown_timeout_s=120)

    world.assert_all_stubs_used()
    (pending,) = caught.value.detail["pending_teardown"]
    assert pending["endpoint_name"] == world.endpoint()
    assert pending["region"] == "us-east-2"
    assert caught.value.detail["refused"][0]["teardown"] == "retry-later"


def test_teardown_answers_retry_later_while_creating_and_deleted_when_gone():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    provider = world.provider()
    placement = {"region": "us-east-2", "endpoint_name": world.endpoint(), "timeline": []}
    world.expect_delete("us-east-2", refused=True)
    world.expect_delete("us-east-2", gone=True)
    first = provider.teardown(placement)
    assert first["state"] == "retry-later" and first["retry_after_s"] == 60
    assert "still in progress" in first["reason"]
    second = provider.teardown(first["placement"])
    assert second["state"] == "deleted"
    assert _events(second["placement"]["timeline"]) == ["delete_refused", "already_gone"]
    assert placement["timeline"] == []  # the caller's dict is not mutated
    world.assert_all_stubs_used()


def test_teardown_without_a_placement_deletes_the_runs_endpoint_by_its_name():
    """Provision died before answering: the workflow sends only region and run id."""
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_delete("us-east-2")  # Stubber checks the endpoint name
    outcome = world.provider().teardown({"region": "us-east-2", "run_id": RUN_ID})
    assert outcome["state"] == "deleted"
    assert _events(outcome["placement"]["timeline"]) == ["delete_requested"]
    world.assert_all_stubs_used()


def test_an_unexpected_delete_error_is_raised_not_swallowed():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.stubs["us-east-2"].add_client_error("delete_endpoint", "AccessDeniedException",
                                              "not authorized")
    with pytest.raises(ClientError, match="AccessDeniedException"):
        world.provider().teardown({"region": "us-east-2", "endpoint_name": world.endpoint(),
                                   "timeline": []})


def test_throttled_describes_are_retried_with_backoff():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    world.expect_create("us-east-2")
    world.stubs["us-east-2"].add_client_error("describe_endpoint", "ThrottlingException",
                                              "Rate exceeded")
    world.stubs["us-east-2"].add_client_error("describe_endpoint", "ThrottlingException",
                                              "Rate exceeded")
    world.expect_describe("us-east-2", "InService", placed="ml.g6.xlarge")

    placement = _place(world)

    world.assert_all_stubs_used()
    assert placement["instance_type"] == "ml.g6.xlarge"
    assert world.clock.sleeps == [0.25, 0.5]  # rand 0.5 x 0.5 s x 2**attempt


def test_a_failing_preflight_stops_before_any_endpoint_or_ssm_call():
    world = World(sagemaker_experiment(), deployed=("us-east-2",))
    world.hub.add(world.experiment.model.id,
                  w4a16_model(ignore=[], extra_16bit=("model.vision_embedder.patch_dense",)))
    with pytest.raises(region_fallback.PlacementFailed) as caught:
        _place(world)
    assert caught.value.kind == ProvisionError.FATAL
    assert str(caught.value).startswith("preflight: acme/gemma-like-w4a16: 2 Linear layer(s) "
                                        "stored at 16-bit are missing")
    world.assert_all_stubs_used()  # nothing queued, nothing called: Stubber would raise


def test_a_region_without_the_stack_is_a_clear_fatal_error():
    world = World(sagemaker_experiment(regions=["us-west-2"]), deployed=())
    with pytest.raises(ProvisionError) as caught:
        world.provider().provision(RUN_ID, "us-west-2")
    assert caught.value.kind == ProvisionError.FATAL
    assert str(caught.value) == (
        "us-west-2: SSM parameter /benchstack/sagemaker/sm-test/endpoint-config-name not "
        "found; deploy experiment sm-test's stack in us-west-2 first")


def test_a_failed_alert_publish_is_recorded_and_the_wait_goes_on():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=("us-east-2",))
    provider = world.provider()
    world.expect_describe("us-east-2", "Creating")
    placement = {"region": "us-east-2", "endpoint_name": world.endpoint(), "run_id": RUN_ID,
                 "provision_started_at": "2026-12-03T00:00:00Z", "alerted": False,
                 "timeline": []}
    import boto3

    boto3.client("ssm", region_name="us-east-2").delete_parameter(
        Name=names.ALERTS_TOPIC_PARAMETER)
    outcome = provider.poll_ready(placement)
    assert outcome["state"] == "waiting"
    failed = outcome["placement"]["timeline"][-1]
    assert failed["event"] == "creating_alert_failed" and "ParameterNotFound" in failed["error"]
    assert outcome["placement"]["alerted"] is True  # one attempt per endpoint, recorded


def test_client_is_the_runtime_client_for_the_placements_endpoint():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=())
    asked = []
    world.factory = lambda service, region: asked.append((service, region)) or "runtime"
    client = world.provider().client({"endpoint_name": "bs-x", "region": "us-east-2"})
    assert isinstance(client, SageMakerRuntimeClient)
    assert (client.runtime, client.endpoint_name, client.model) == ("runtime", "bs-x", "gemma")
    assert asked == [("sagemaker-runtime", "us-east-2")]


def test_runtime_client_counts_throttles_instead_of_retrying_them():
    runtime = runtime_client("sagemaker-runtime", "us-east-2", boto3.Session(
        aws_access_key_id="x", aws_secret_access_key="x"))
    assert runtime.meta.config.retries["total_max_attempts"] == 1  # no retry at all
    assert runtime.meta.config.max_pool_connections == 64
    assert runtime.meta.region_name == "us-east-2"


def test_ready_timeout_covers_sagemakers_own_timeouts():
    world = World(sagemaker_experiment(regions=["us-east-2"]), deployed=())
    assert world.provider().ready_timeout_s == 3 * 1800 + 600
