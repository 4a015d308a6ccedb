"""What a sweep leaves behind (audit in S3, CloudWatch counts, SNS alert), the run-status
lookup through Step Functions, and the Lambda entry point, all against moto."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import boto3
import pytest

from runners import tags
from runners.watchdog import lambda_handler as watchdog_lambda
from runners.watchdog import report as watchdog_report
from runners.watchdog import sweep as watchdog
from runners.watchdog.clients import Clients
from runners.watchdog.inventory import DELETABLE, TRANSITIONAL, Resource
from runners.watchdog.runs import StepFunctionsRuns, execution_region
from tests.runners.watchdog_fixtures import aws, world  # noqa: F401 - fixtures
from tests.runners.watchdog_world import EXPIRED, NOW, REGIONS, UNEXPIRED, run_tags

HOME = "us-east-2"


def _bucket_and_queue():
    """A results bucket, and an SQS queue subscribed to an alerts topic to read alerts."""
    boto3.client("s3", HOME).create_bucket(
        Bucket="results", CreateBucketConfiguration={"LocationConstraint": HOME})
    sns, sqs = boto3.client("sns", HOME), boto3.client("sqs", HOME)
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="alerts-inbox")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn,
                  Attributes={"RawMessageDelivery": "true"})
    return topic, queue


def _metric_sums(action: str) -> float:
    cloudwatch = boto3.client("cloudwatch", HOME)
    answer = cloudwatch.get_metric_statistics(
        Namespace=watchdog_report.NAMESPACE, MetricName=watchdog_report.METRIC,
        Dimensions=[{"Name": "Action", "Value": action}], StartTime=NOW - timedelta(hours=1),
        EndTime=NOW + timedelta(hours=1), Period=3600, Statistics=["Sum"])
    return sum(point["Sum"] for point in answer["Datapoints"])


def test_publish_writes_audit_metrics_and_one_alert(world):
    topic, queue = _bucket_and_queue()
    world.endpoint("us-east-1", "old", run_tags("run-old", EXPIRED))
    world.endpoint("us-west-2", "odd", run_tags("run-odd", "next tuesday"))
    report = watchdog.sweep(REGIONS, now=NOW, run_status=lambda _t: "RUNNING")
    watchdog_report.publish(report, clients=Clients(), region=HOME, bucket="results",
                            topic_arn=topic)

    key = f"watchdog/2026-12-03/{report.sweep_id}.jsonl"
    assert watchdog_report.audit_key(report) == key
    body = boto3.client("s3", HOME).get_object(Bucket="results", Key=key)["Body"].read()
    audit = [json.loads(line) for line in body.decode().splitlines()]
    assert len(audit) == len(report.lines) == 6  # endpoint, config, model in two regions
    assert {(a["id"], a["kind"], a["action"]) for a in audit} >= {
        ("old", "sagemaker-endpoint", "deleted"), ("odd", "sagemaker-endpoint", "kept")}
    assert all(a["sweep_id"] == report.sweep_id for a in audit)

    assert _metric_sums("deleted") == 3
    assert _metric_sums("kept") == 3
    assert _metric_sums("refused") == 0  # zeros are published too

    messages = boto3.client("sqs", HOME).receive_message(
        QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 1
    assert "us-west-2 sagemaker-endpoint odd [InService]: kept: " in messages[0]["Body"]
    assert "'next tuesday' is not an ISO 8601 time" in messages[0]["Body"]


def test_no_alert_when_nothing_needs_a_person(world):
    world.endpoint("us-east-1", "old", run_tags("run-old", EXPIRED))
    report = watchdog.sweep(REGIONS, now=NOW, run_status=lambda _t: "RUNNING")
    assert watchdog_report.alert_message(report) is None


def test_publish_failure_still_sends_the_other_outputs(aws):
    topic, queue = _bucket_and_queue()
    report = watchdog.SweepReport("s1", NOW, REGIONS, False, lines=[{
        "action": "refused", "attention": True, "region": HOME, "kind": "ec2-instance",
        "id": "i-1", "state": "running", "reason": "delete failed"}])
    with pytest.raises(Exception, match="NoSuchBucket"):
        watchdog_report.publish(report, clients=Clients(), region=HOME, bucket="missing",
                                topic_arn=topic)
    assert _metric_sums("refused") == 1
    assert len(boto3.client("sqs", HOME).receive_message(QueueUrl=queue)["Messages"]) == 1


def _execution(status_after: str) -> str:
    """A moto Step Functions execution, named after its run id as the workflow does."""
    sfn = boto3.client("stepfunctions", HOME)
    machine = sfn.create_state_machine(
        name="Benchstack-Workflow", roleArn="arn:aws:iam::123456789012:role/sfn",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass",
                                                                "End": True}}}))
    arn = sfn.start_execution(stateMachineArn=machine["stateMachineArn"],
                              name="run-7")["executionArn"]
    if status_after == "ABORTED":
        sfn.stop_execution(executionArn=arn)
    return arn


def test_run_status_comes_from_the_execution_arn_tag_once_per_execution(aws):
    arn = _execution("ABORTED")
    assert arn.endswith(":run-7") and execution_region(arn) == HOME
    clients = Clients()
    calls = []
    clients.get("stepfunctions", HOME).meta.events.register(
        "before-call.states.DescribeExecution", lambda **kw: calls.append(kw))
    runs = StepFunctionsRuns(clients)
    tagged = run_tags("run-7", UNEXPIRED, execution_arn=arn)
    assert runs(tagged) == "ABORTED"
    assert runs(tagged) == "ABORTED"
    assert len(calls) == 1  # endpoint, config and model of one run share the lookup
    assert runs(run_tags("run-8", UNEXPIRED)) is None  # no tag: nothing to ask
    missing = arn.replace(":run-7", ":run-gone")
    assert runs(run_tags("x", UNEXPIRED, execution_arn=missing)).startswith("unknown (")
    assert runs(run_tags("x", UNEXPIRED, execution_arn="not-an-arn")) is None


def test_aborted_execution_ends_the_run_in_a_real_sweep(world):
    arn = _execution("ABORTED")
    world.endpoint("us-west-2", "run-7", run_tags("run-7", UNEXPIRED, execution_arn=arn))
    report = watchdog.sweep(REGIONS, now=NOW)  # the default resolver, through moto
    line = next(l for l in report.lines if l["kind"] == "sagemaker-endpoint")
    assert (line["action"], line["reason"]) == ("deleted", "run ended: execution ABORTED")
    assert world.endpoints("us-west-2") == set()


def _resource(expires: str | None, state: str = "InService", **extra) -> Resource:
    found = {tags.MANAGED: "true", tags.RUN_ID: "r"}
    if expires is not None:
        found[tags.EXPIRES_AT] = expires
    return Resource(region=HOME, kind="sagemaker-endpoint", id="e", state=state,
                    tags=found, **extra)


@pytest.mark.parametrize("expires, status, phase, decision, reason", [
    ("2026-12-03T11:00:00Z", None, DELETABLE, "delete", "expired 1.00 h ago"),
    ("2026-12-03T12:00:00+00:00", None, DELETABLE, "delete", "expired 0.00 h ago"),
    ("2026-12-03T07:30:00-05:00", "RUNNING", DELETABLE, "kept",
     "expires in 0.50 h; run RUNNING"),
    ("2026-12-03T13:00:00Z", "SUCCEEDED", DELETABLE, "delete",
     "run ended: execution SUCCEEDED"),
    ("2026-12-03T13:00:00Z", None, DELETABLE, "kept",
     "expires in 1.00 h; run has no execution to check"),
    ("2026-12-03T13:00:00Z", "unknown (AccessDeniedException)", DELETABLE, "kept",
     "expires in 1.00 h; run unknown (AccessDeniedException)"),
])
def test_judge(expires, status, phase, decision, reason):
    verdict = watchdog.judge(_resource(expires), phase, NOW, lambda _t: status)
    assert (verdict.decision, verdict.reason) == (decision, reason)


def test_judge_never_deletes_what_a_cloudformation_stack_owns():
    resource = _resource("2026-12-03T11:00:00Z")
    resource.tags["aws:cloudformation:stack-name"] = "Benchstack-Exp-x-us-east-2"
    verdict = watchdog.judge(resource, DELETABLE, NOW, lambda _t: "FAILED")
    assert (verdict.decision, verdict.attention) == ("kept", True)
    assert verdict.reason == ("owned by CloudFormation stack Benchstack-Exp-x-us-east-2; "
                              "never deleted here")


def test_judge_defers_a_transitional_resource_with_its_age():
    resource = _resource("2026-12-03T11:00:00Z", state="Creating",
                         created_at=NOW - timedelta(hours=3, minutes=17, seconds=24))
    verdict = watchdog.judge(resource, TRANSITIONAL, NOW, lambda _t: None)
    assert verdict.decision == "deferred" and verdict.attention
    assert verdict.reason == ("expired 1.00 h ago; Creating for 3.29 h, which refuses "
                              "deletion; deleted by a later sweep")


def test_lambda_handler_sweeps_the_configured_regions_and_reports(world, monkeypatch):
    topic, _ = _bucket_and_queue()
    world.endpoint("us-east-1", "old", run_tags("run-old", "2000-01-01T00:00:00Z"))
    world.endpoint("us-west-2", "elsewhere", run_tags("run-x", "2000-01-01T00:00:00Z"))
    monkeypatch.setenv("WATCHDOG_REGIONS", "us-east-1, us-east-2")
    monkeypatch.setenv("RESULTS_BUCKET", "results")
    monkeypatch.setenv("ALERTS_TOPIC_ARN", topic)
    monkeypatch.setenv("WATCHDOG_DRY_RUN", "false")
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 300_000)
    answer = watchdog_lambda.handler({"dry_run": False}, context)
    assert answer["counts"]["deleted"] == 3
    assert world.endpoints("us-east-1") == set()
    assert world.endpoints("us-west-2") == {"elsewhere"}  # not a configured region
    listed = boto3.client("s3", HOME).list_objects_v2(Bucket="results", Prefix="watchdog/")
    assert [o["Key"] for o in listed["Contents"]][0].endswith(f"{answer['sweep_id']}.jsonl")


def test_lambda_dry_run_by_configuration_or_by_event(world, monkeypatch):
    world.endpoint("us-east-1", "old", run_tags("run-old", "2000-01-01T00:00:00Z"))
    monkeypatch.setenv("WATCHDOG_REGIONS", "us-east-1")
    monkeypatch.setenv("WATCHDOG_DRY_RUN", "true")
    assert watchdog_lambda.handler({"dry_run": False}, None)["counts"]["would-delete"] == 3
    monkeypatch.setenv("WATCHDOG_DRY_RUN", "false")
    assert watchdog_lambda.handler({"dry_run": True}, None)["counts"]["would-delete"] == 3
    assert world.endpoints("us-east-1") == {"old"}


def test_config_from_env_defaults():
    config = watchdog_lambda.config_from_env({})
    assert config == {"regions": ("us-east-1", "us-east-2", "us-west-2"), "dry_run": False,
                      "bucket": None, "topic_arn": None}
