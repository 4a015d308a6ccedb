"""Cloud tools against moto, with a botocore Stubber where moto falls short (execution
history in reverse order, the DLC registry): start, status, billing now, the watchdog
sweep, teardown of one run, and the vLLM image lookup."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3

from benchstack_mcp.config import Config
from runners.providers.sagemaker import names
from tests.mcp.client import call, error_text
from tests.mcp.sessions import StubbedSession
from tests.runners.test_start import deployed  # noqa: F401 - a pytest fixture
from tests.runners.watchdog_fixtures import aws, world  # noqa: F401 - fixtures
from tests.runners.watchdog_world import run_tags

ARN = "arn:aws:states:us-east-2:123456789012:execution:benchstack-benchmark:20261203T001500Z-ab12cd"
TELEMETRY_FIXTURES = Path(__file__).resolve().parents[1] / "telemetry" / "fixtures"
# The tools judge expiry against the real clock, not the watchdog tests' fixed NOW.
EXPIRED = datetime.now(timezone.utc) - timedelta(hours=1)
UNEXPIRED = datetime.now(timezone.utc) + timedelta(hours=2)
PREFIX = "runs/2026-12-03-e2b-emb4-ml-g6/20261203T001500Z-ab12cd/"


def test_start_returns_the_execution_and_results_folder(deployed):
    exp, region, machine = deployed
    result = call(Config(), "start_cloud_run", {"experiment_name": exp.name})
    assert not result.is_error, result.content
    started = result.structured_content
    (execution,) = boto3.client("stepfunctions", region_name=region).list_executions(
        stateMachineArn=machine)["executions"]
    assert started["execution_arn"] == execution["executionArn"]
    assert started["region"] == region and started["status"] == "RUNNING"
    assert started["results"].startswith(f"s3://results-bucket-1/runs/")
    assert started["results"].endswith(f"-{exp.name}/{execution['name']}/")


def test_start_refuses_in_one_line(deployed):
    exp, _, _ = deployed
    local = call(Config(), "start_cloud_run", {"experiment_name": "local-smollm2-135m"})
    assert error_text(local).endswith("backend: 'local' runs locally: use run_local_benchmark")
    region = call(Config(), "start_cloud_run", {"experiment_name": exp.name,
                                                "region": "eu-west-1"})
    assert "regions: 'eu-west-1' is not one of us-east-2, us-east-1, us-west-2" in \
        error_text(region)
    undeployed = call(Config(), "start_cloud_run", {"experiment_name": "e2b-emb4-g6"})
    assert error_text(undeployed).endswith(
        "experiment 'e2b-emb4-g6' is not deployed in us-east-2; deploy "
        "Benchstack-Exp-e2b-emb4-g6-us-east-2 first")


def _history(*names: str) -> dict:
    """GetExecutionHistory with reverseOrder: the newest event first."""
    events = []
    for i, name in enumerate(names):
        events.append({"timestamp": datetime(2026, 12, 3, 0, 20 - i, tzinfo=timezone.utc),
                       "type": "TaskStateEntered", "id": 100 - 5 * i,
                       "stateEnteredEventDetails": {"name": name}})
        events.insert(-1, {"timestamp": datetime(2026, 12, 3, 0, 20 - i, tzinfo=timezone.utc),
                           "type": "TaskScheduled", "id": 101 - 5 * i,
                           "taskScheduledEventDetails": {"resourceType": "lambda",
                                                         "resource": "invoke",
                                                         "region": "us-east-2",
                                                         "parameters": "{}"}})
    return {"events": events}


def test_status_gives_the_phase_running_now_and_the_phases_written(aws):
    s3 = boto3.client("s3", region_name="us-east-2")
    s3.create_bucket(Bucket="results-1",
                     CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
    for name in ("manifest", "provision", "await_ready", "await_ready.2", "warmup"):
        s3.put_object(Bucket="results-1", Key=f"{PREFIX}{name}.json", Body=b"{}")
    session = StubbedSession({"stepfunctions": "us-east-2"})
    sfn = session.stubbers["stepfunctions"]
    execution_input = {"run": {"run_id": "20261203T001500Z-ab12cd", "results_bucket": "results-1",
                               "results_prefix": PREFIX}}
    sfn.add_response("describe_execution", {
        "executionArn": ARN, "stateMachineArn": ARN.replace(":execution:", ":stateMachine:")
        .rsplit(":", 1)[0], "status": "RUNNING", "input": json.dumps(execution_input),
        "startDate": datetime(2026, 12, 3, 0, 15, tzinfo=timezone.utc)},
        {"executionArn": ARN})
    sfn.add_response("get_execution_history", _history("decode", "warmup"),
                     {"executionArn": ARN, "reverseOrder": True, "maxResults": 50})
    result = call(Config(session_factory=lambda: session), "run_status",
                  {"execution_arn": ARN})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["status"] == "RUNNING"
    assert out["current_state"] == "decode" and out["current_phase"] == "decode"
    assert out["phases_written"] == ["provision", "await_ready", "warmup"]
    assert out["results"] == f"s3://results-1/{PREFIX}"
    assert out["started_at"] == "2026-12-03T00:15:00+00:00"
    session.assert_no_pending_responses()


def test_status_of_a_bad_arn_and_of_an_unknown_execution(aws):
    bad = call(Config(), "run_status", {"execution_arn": "arn:aws:s3:::bucket"})
    assert "not a Step Functions execution ARN" in error_text(bad)
    session = StubbedSession({"stepfunctions": "us-east-2"})
    session.stubbers["stepfunctions"].add_client_error(
        "describe_execution", "ExecutionDoesNotExist", "Execution Does Not Exist: " + ARN)
    gone = call(Config(session_factory=lambda: session), "run_status", {"execution_arn": ARN})
    assert error_text(gone).endswith(
        "AWS: An error occurred (ExecutionDoesNotExist) when calling the DescribeExecution "
        f"operation: Execution Does Not Exist: {ARN}")


def _running_execution(region: str) -> str:
    role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")
    sfn = boto3.client("stepfunctions", region_name=region)
    machine = sfn.create_state_machine(
        name="benchstack-benchmark", roleArn=role["Role"]["Arn"],
        definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}))
    return sfn.start_execution(stateMachineArn=machine["stateMachineArn"],
                               name="run-live")["executionArn"]


def test_billing_now_lists_and_deletes_nothing_then_the_sweep_deletes_the_expired(world):
    world.endpoint("us-east-2", "old", run_tags("run-old", EXPIRED))
    world.endpoint("us-east-2", "live", run_tags("run-live", UNEXPIRED))
    world.instance("us-west-2", run_tags("run-old", EXPIRED))
    billing = call(Config(), "billing_now", {"regions": ["us-east-2", "us-west-2"]})
    assert not billing.is_error, billing.content
    out = billing.structured_content
    assert out["dry_run"] is True
    actions = {(r["kind"], r["id"]): r["action"] for r in out["resources"]}
    assert actions[("sagemaker-endpoint", "old")] == "would-delete"
    assert actions[("sagemaker-endpoint", "live")] == "kept"
    assert sum(1 for a in actions.values() if a == "would-delete") == 4  # endpoint, config,
    assert world.endpoints("us-east-2") == {"old", "live"}  # model, instance; none deleted

    swept = call(Config(), "watchdog_sweep", {"regions": ["us-east-2", "us-west-2"]})
    assert swept.structured_content["counts"]["deleted"] == 4
    assert world.endpoints("us-east-2") == {"live"}
    assert world.live_instances("us-west-2") == set()
    unknown = call(Config(), "billing_now", {"regions": ["mars-1"]})
    assert "--regions: mars-1 not known" in error_text(unknown)


def test_teardown_stops_the_running_execution_and_deletes_only_that_run(world):
    arn = _running_execution("us-east-2")
    world.endpoint("us-east-2", "live", run_tags("run-live", UNEXPIRED, execution_arn=arn))
    world.endpoint("us-east-2", "other", run_tags("run-other", UNEXPIRED))
    world.fleet("us-east-2", run_tags("run-live", UNEXPIRED, execution_arn=arn))
    result = call(Config(), "teardown_run", {"run_id": "run-live", "regions": ["us-east-2"]})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["complete"] is True
    assert [(line["kind"], line["action"]) for line in out["lines"]] == [
        ("stepfunctions-execution", "stopped"),
        ("sagemaker-endpoint", "deleted"), ("sagemaker-endpoint-config", "deleted"),
        ("sagemaker-model", "deleted"), ("ec2-fleet", "deleted"), ("ec2-instance", "deleted")]
    status = boto3.client("stepfunctions", region_name="us-east-2").describe_execution(
        executionArn=arn)["status"]
    assert status == "ABORTED"
    assert world.endpoints("us-east-2") == {"other"}
    assert world.models("us-east-2") == {"other"}
    # a second call deletes nothing more: the execution has stopped, the fleet is leaving
    again = call(Config(), "teardown_run", {"run_id": "run-live", "regions": ["us-east-2"]})
    assert {line["action"] for line in again.structured_content["lines"]} == {"kept"}
    assert again.structured_content["complete"] is True


def test_aws_tools_without_credentials_say_so(monkeypatch, aws):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    result = call(Config(), "billing_now", {})
    assert error_text(result).endswith("no AWS credentials found (set AWS_PROFILE or run "
                                       "`aws configure`)")


def _images(*tags_pushed: tuple[list[str], int]) -> dict:
    return {"imageDetails": [
        {"registryId": "763104351884", "repositoryName": "vllm",
         "imageDigest": f"sha256:{i:064x}", "imageTags": image_tags,
         "imagePushedAt": datetime(2026, month, 1, tzinfo=timezone.utc)}
        for i, (image_tags, month) in enumerate(tags_pushed)]}


def test_find_vllm_image_picks_the_highest_sagemaker_version_not_the_newest_push(aws):
    session = StubbedSession({"ecr": "us-east-2"})
    ecr = session.stubbers["ecr"]
    params = {"registryId": "763104351884", "repositoryName": "vllm",
              "filter": {"tagStatus": "TAGGED"}}
    first = _images((["0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.9",
                      "0.30-gpu-py312-sagemaker"], 9),
                    (["server-sagemaker-cuda-v1"], 11))
    ecr.add_response("describe_images", {**first, "nextToken": "page-2"}, params)
    ecr.add_response("describe_images", _images(
        (["0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.10"], 10),
        (["0.29.2-gpu-py312-cu129-ubuntu22.04-sagemaker-v1.3"], 12),  # a patch rebuild
        (["0.31.0-gpu-py312-cu130-ubuntu24.04-ec2-v1.0"], 12)),
        {**params, "nextToken": "page-2"})
    result = call(Config(session_factory=lambda: session), "find_vllm_image",
                  {"region": "us-east-2"})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["tag"] == "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.10"
    assert out["image_uri"] == ("763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:"
                                "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.10")
    assert out["sagemaker_tags_seen"] == 3
    session.assert_no_pending_responses()
    unknown = call(Config(), "find_vllm_image", {"region": "sa-east-1"})
    assert "region 'sa-east-1': no DLC registry known" in error_text(unknown)


def test_teardown_defers_an_endpoint_still_creating_and_keeps_its_config_and_model(aws):
    session = StubbedSession({"sagemaker": "us-east-2"})
    sm = session.stubbers["sagemaker"]
    created = datetime.now(timezone.utc) - timedelta(minutes=5)
    found = [{"Key": k, "Value": v} for k, v in run_tags("run-1", UNEXPIRED).items()]
    arn = "arn:aws:sagemaker:us-east-2:123456789012:{}/bench-run-1"
    sm.add_response("list_endpoints", {"Endpoints": [{
        "EndpointName": "bench-run-1", "EndpointArn": arn.format("endpoint"),
        "CreationTime": created, "LastModifiedTime": created,
        "EndpointStatus": "Creating"}]}, {})
    sm.add_response("list_tags", {"Tags": found}, {"ResourceArn": arn.format("endpoint")})
    sm.add_response("list_endpoint_configs", {"EndpointConfigs": [{
        "EndpointConfigName": "bench-run-1", "EndpointConfigArn": arn.format("endpoint-config"),
        "CreationTime": created}]}, {})
    sm.add_response("list_tags", {"Tags": found},
                    {"ResourceArn": arn.format("endpoint-config")})
    sm.add_response("list_models", {"Models": [{
        "ModelName": "bench-run-1", "ModelArn": arn.format("model"),
        "CreationTime": created}]}, {})
    sm.add_response("list_tags", {"Tags": found}, {"ResourceArn": arn.format("model")})
    result = call(Config(session_factory=lambda: session), "teardown_run",
                  {"run_id": "run-1", "regions": ["us-east-2"]})
    assert not result.is_error, result.content
    out = result.structured_content
    # no Delete* call was stubbed: the Stubber would fail the tool on any
    assert [(line["kind"], line["action"]) for line in out["lines"]] == [
        ("sagemaker-endpoint", "deferred"), ("sagemaker-endpoint-config", "deferred"),
        ("sagemaker-model", "deferred")]
    assert out["lines"][0]["reason"] == "Creating refuses deletion; call again once it settles"
    assert out["complete"] is False
    session.assert_no_pending_responses()


def _put_log(region: str, group: str, events: list[tuple[int, str]]) -> None:
    logs = boto3.client("logs", region_name=region)
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="AllTraffic/i-0a1b2c3d4e5f60718")
    logs.put_log_events(logGroupName=group, logStreamName="AllTraffic/i-0a1b2c3d4e5f60718",
                        logEvents=[{"timestamp": ms, "message": m} for ms, m in events])


def test_engine_log_reads_the_endpoints_recent_lines_and_the_engines_facts(aws):
    endpoint = names.endpoint_name("e2b-bf16-ml-g6", "20261203T001500Z-ab12cd")
    now_ms = int(time.time() * 1000)
    fixture = [line.split(" ", 2)[2] for line in
               (TELEMETRY_FIXTURES / "vllm-sagemaker-cloudwatch.log").read_text().splitlines()]
    old = [(now_ms - 3 * 3600_000, "an old start-up, outside the window")]
    recent = [(now_ms - 20 * 60_000 + i * 1000, message) for i, message in enumerate(fixture)]
    _put_log("us-east-2", f"/aws/sagemaker/Endpoints/{endpoint}", old + recent)
    result = call(Config(), "engine_log", {"experiment_name": "e2b-bf16-ml-g6",
                                           "run_id": "20261203T001500Z-ab12cd", "tail": 3})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["available"] is True and out["region"] == "us-east-2"
    assert out["lines_read"] == len(fixture)  # the old line is outside the last hour
    assert [line["message"] for line in out["lines"]] == fixture[-3:]
    assert out["lines"][0]["stream"] == "AllTraffic/i-0a1b2c3d4e5f60718"
    assert out["facts"]["engine"] == "vllm"
    assert out["facts"]["kv_cache_tokens"] == 1_209_977


def test_engine_log_of_an_endpoint_without_a_log_group_says_why(aws):
    result = call(Config(), "engine_log", {"endpoint_name": "bs-waiting", "region": "us-east-2"})
    out = result.structured_content
    assert out["available"] is False and out["lines"] == []
    assert out["note"] == "log group /aws/sagemaker/Endpoints/bs-waiting does not exist (yet)"
    unnamed = call(Config(), "engine_log", {"region": "us-east-2"})
    assert error_text(unnamed).endswith("give endpoint_name, or experiment_name and run_id")
    too_long = call(Config(), "engine_log", {"endpoint_name": "x", "region": "us-east-2",
                                             "minutes": 99999})
    assert "less than or equal to 10080" in error_text(too_long)
