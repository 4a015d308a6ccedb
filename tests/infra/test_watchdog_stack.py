"""WatchdogStack: schedule, function, and a role that can delete only what is tagged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import App

from runners import experiment
from stacks import names
from stacks.build import build
from stacks.watchdog import WatchdogSettings
from tests.conftest import EXPERIMENTS_DIR, ROOT, cdk_context
from tests.infra.templates import only, resources

DELETES = {"sagemaker:DeleteEndpoint", "sagemaker:DeleteEndpointConfig",
           "sagemaker:DeleteModel", "ec2:TerminateInstances", "ec2:DeleteFleets"}
# actions with no resource-level permissions: the only ones allowed on "*"
STAR_ACTIONS = {"sagemaker:ListEndpoints", "sagemaker:ListEndpointConfigs",
                "sagemaker:ListModels", "ec2:DescribeInstances", "ec2:DescribeFleets",
                "ec2:DescribeTags",
                "cloudwatch:PutMetricData"}


@pytest.fixture(scope="module")
def template(templates):
    return templates[names.watchdog()]


def _statements(template: dict) -> list[dict]:
    found = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            found.append({**statement, "Action": [actions] if isinstance(actions, str)
                          else actions})
    return found


def test_one_watchdog_in_the_home_region_after_its_foundation(assembly):
    stack = assembly.get_stack_by_name(names.watchdog())
    assert stack.environment.region == "us-east-2"
    # read from the manifest: `stack.dependencies` would make jsii proxy the foundation
    # artifact as a plain CloudArtifact for the rest of the session
    assert names.foundation("us-east-2") in stack.manifest.dependencies


def test_runs_every_15_minutes_on_the_sweep_function(template):
    rule = only(template, "AWS::Events::Rule")["Properties"]
    assert rule["ScheduleExpression"] == "rate(15 minutes)"
    assert rule["State"] == "ENABLED"
    (target,) = rule["Targets"]
    function_id = target["Arn"]["Fn::GetAtt"][0]
    assert template["Resources"][function_id]["Type"] == "AWS::Lambda::Function"


def test_function_runs_the_runners_code_within_the_schedule(template):
    function = only(template, "AWS::Lambda::Function")["Properties"]
    assert function["Runtime"] == "python3.12"
    assert function["Handler"] == "runners.watchdog.lambda_handler.handler"
    assert function["Timeout"] == 300 < 15 * 60  # sweeps never overlap
    assert function["Architectures"] == ["arm64"]
    env = function["Environment"]["Variables"]
    assert env["WATCHDOG_REGIONS"] == "us-east-1,us-east-2,us-west-2"
    assert env["WATCHDOG_DRY_RUN"] == "false"
    # the bucket name comes from the foundation's SSM parameter at deploy time
    (bucket_param,) = [k for k, p in template["Parameters"].items()
                       if p.get("Default") == names.foundation_parameter("results-bucket")]
    assert env["RESULTS_BUCKET"] == {"Ref": bucket_param}
    assert "Fn::GetStackOutput" in env["ALERTS_TOPIC_ARN"]  # the home foundation's topic
    logs = only(template, "AWS::Logs::LogGroup")["Properties"]
    assert logs["RetentionInDays"] == 90
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": next(
        iter(resources(template, "AWS::Logs::LogGroup")))}


def test_asset_is_the_runners_package_and_the_pinned_sdk(assembly):
    manifest = Path(assembly.directory) / f"{names.watchdog()}.assets.json"
    (source,) = [f["source"] for f in json.loads(manifest.read_text())["files"].values()
                 if f["source"].get("packaging") == "zip"]
    folder = Path(assembly.directory) / source["path"]
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert "runners/watchdog/lambda_handler.py" in files and "runners/tags.py" in files
    # code, and the data files the runners read (the checked-in prices, workload presets)
    ours = [f for f in files if f.startswith("runners/")]
    assert all(f.endswith((".py", ".json", ".toml")) for f in ours), ours
    # the rest is the SDK (benchstack_constructs/runner_bundle.py)
    assert {f.split("/")[0].split("-")[0] for f in files if f not in ours} == {
        "boto3", "botocore", "s3transfer", "jmespath", "dateutil", "python_dateutil",
        "six.py", "six", "urllib3"}
    assert not [f for f in files if "__pycache__" in f or "/." in f]


def test_role_has_no_managed_policies(template):
    role = only(template, "AWS::IAM::Role")["Properties"]
    assert "ManagedPolicyArns" not in role
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "lambda.amazonaws.com"}


def test_every_delete_is_conditioned_on_the_managed_tag(template):
    deleting = [s for s in _statements(template) if DELETES & set(s["Action"])]
    assert DELETES == {a for s in deleting for a in s["Action"]}
    for statement in deleting:
        assert set(statement["Action"]) <= DELETES  # nothing else rides on these
        assert statement["Condition"] == {
            "StringEquals": {"aws:ResourceTag/benchstack:managed": "true"}}
        for resource in statement["Resource"]:
            arn = "".join(p if isinstance(p, str) else "<account>"
                          for p in resource["Fn::Join"][1])
            service, region, account, what = arn.split(":", 5)[2:6]
            assert (service, account) in {("sagemaker", "<account>"), ("ec2", "<account>")}
            assert region in ("us-east-1", "us-east-2", "us-west-2")
            assert what.split("/")[0] in {"endpoint", "endpoint-config", "model", "instance",
                                          "fleet"}


def test_star_resources_only_for_actions_without_resource_permissions(template):
    for statement in _statements(template):
        if statement["Resource"] == "*":
            assert set(statement["Action"]) <= STAR_ACTIONS, statement
            assert "Condition" in statement  # region- or namespace-limited
    listing = next(s for s in _statements(template) if "sagemaker:ListEndpoints" in
                   s["Action"])
    assert listing["Condition"] == {"StringEquals": {
        "aws:RequestedRegion": ["us-east-1", "us-east-2", "us-west-2"]}}
    metrics = next(s for s in _statements(template) if "cloudwatch:PutMetricData" in
                   s["Action"])
    assert metrics["Condition"] == {"StringEquals": {
        "cloudwatch:namespace": "Benchstack/Watchdog"}}


def test_writes_only_audit_objects_and_publishes_only_to_the_alerts_topic(template):
    by_action = {a: s for s in _statements(template) for a in s["Action"]}
    audit = by_action["s3:PutObject"]
    assert audit["Action"] == ["s3:PutObject"]
    assert audit["Resource"]["Fn::Join"][1][-1] == "/watchdog/*"
    assert not any(a.startswith("s3:") and a != "s3:PutObject" for a in by_action)
    assert by_action["sns:Publish"]["Action"] == ["sns:Publish"]
    assert "Fn::GetStackOutput" in by_action["sns:Publish"]["Resource"]
    assert set(by_action["kms:Decrypt"]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}
    assert by_action["states:DescribeExecution"]["Action"] == ["states:DescribeExecution"]
    assert all("*" not in a for a in by_action), "no wildcard actions"


def test_alarm_fires_when_the_sweep_fails_or_stops_running(template):
    alarm = only(template, "AWS::CloudWatch::Alarm")["Properties"]
    assert alarm["MetricName"] == "Errors" and alarm["Namespace"] == "AWS/Lambda"
    assert alarm["TreatMissingData"] == "breaching"
    assert alarm["Period"] == 1800
    assert "Fn::GetStackOutput" in alarm["AlarmActions"][0]


def test_nag_acknowledgments_name_each_wildcard_resource(assembly):
    metadata = Path(assembly.directory) / f"{names.watchdog()}.metadata.json"
    acknowledged = {}
    for entries in json.loads(metadata.read_text()).values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                acknowledged.update(entry["data"])
    iam5 = {k for k in acknowledged if "IAM5" in k}
    assert "AwsSolutions::AwsSolutions-IAM5[Resource::*]" in iam5
    assert ("AwsSolutions::AwsSolutions-IAM5[Resource::arn:aws:sagemaker:us-west-2:"
            "<AWS::AccountId>:endpoint/*]") in iam5
    assert not any(k.endswith("IAM5") for k in iam5)  # never the whole rule
    assert "Delete* is conditioned on aws:ResourceTag/benchstack:managed=true" in \
        acknowledged["AwsSolutions::AwsSolutions-IAM5[Resource::arn:aws:sagemaker:us-east-1:"
                     "<AWS::AccountId>:model/*]"]


def _built(tmp_path, **context):
    exp = experiment.find(EXPERIMENTS_DIR, "e2b-fp16-g5g")  # us-east-1 and us-west-2 only
    app = App(outdir=str(tmp_path), context=cdk_context(**context))
    built = build(app, [exp], validate=False)
    return built, app.synth()


def test_settings_from_context_and_a_foundation_for_the_home_region(tmp_path):
    built, assembly = _built(tmp_path, watchdog_region="eu-west-1",
                             watchdog_regions="us-east-1,us-west-2,eu-west-1",
                             watchdog_dry_run="true", watchdog_rate_minutes=30)
    assert built.watchdog.settings == WatchdogSettings(
        "eu-west-1", ("us-east-1", "us-west-2", "eu-west-1"), 30, True)
    assert names.foundation("eu-west-1") in {s.stack_name for s in assembly.stacks}
    template = assembly.get_stack_by_name(names.watchdog()).template
    assert only(template, "AWS::Events::Rule")["Properties"]["ScheduleExpression"] == \
        "rate(30 minutes)"
    env = only(template, "AWS::Lambda::Function")["Properties"]["Environment"]["Variables"]
    assert (env["WATCHDOG_REGIONS"], env["WATCHDOG_DRY_RUN"]) == (
        "us-east-1,us-west-2,eu-west-1", "true")


def test_no_watchdog_without_a_cloud_experiment(tmp_path):
    app = App(outdir=str(tmp_path), context=cdk_context())
    built = build(app, [experiment.find(EXPERIMENTS_DIR, "local-gemma3-270m")],
                  validate=False)
    assert built.watchdog is None and not built.stacks


@pytest.mark.parametrize("context, message", [
    ({"watchdog_regions": "us-east-1,mars-1"},
     "cdk context: watchdog_regions: 'mars-1' is not a known region; known: us-east-1"),
    ({"watchdog_region": "moon"}, "cdk context: watchdog_region: 'moon' is not a known"),
    ({"watchdog_rate_minutes": "5"}, "cdk context: watchdog_rate_minutes: must be a whole"),
    ({"watchdog_dry_run": "maybe"}, "cdk context: watchdog_dry_run: 'maybe': use true or"),
])
def test_bad_context_is_one_clear_error(tmp_path, context, message):
    with pytest.raises(experiment.ExperimentError) as caught:
        _built(tmp_path, **context)
    assert str(caught.value).startswith(message)


def test_bad_context_through_app_py_is_one_line(tmp_path):
    ctx = {**cdk_context(), "watchdog_regions": "mars-1"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(CDK_CONTEXT_JSON=json.dumps(ctx), CDK_OUTDIR=str(tmp_path),
               CDK_VALIDATION="false")
    out = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        "error: cdk context: watchdog_regions: 'mars-1' is not a known region")


def test_the_alarm_may_publish_to_the_home_alerts_topic(templates):
    foundation = templates[names.foundation("us-east-2")]
    policy = only(foundation, "AWS::SNS::TopicPolicy")["Properties"]["PolicyDocument"]
    allowed = [s for s in policy["Statement"] if s["Effect"] == "Allow"
               and "cloudwatch.amazonaws.com" in s["Principal"]["Service"]]
    assert len(allowed) == 1
    assert allowed[0]["Action"] == "sns:Publish"
    assert allowed[0]["Condition"]["StringEquals"] == {"aws:SourceAccount": {
        "Ref": "AWS::AccountId"}}
    assert "cloudwatch:*:" in json.dumps(allowed[0]["Condition"]["ArnLike"])


def test_an_experiment_region_the_watchdog_does_not_sweep_is_refused_in_one_line(tmp_path):
    with pytest.raises(experiment.ExperimentError) as caught:
        _built(tmp_path, watchdog_regions="us-east-1,us-east-2")
    assert str(caught.value) == (
        f"{EXPERIMENTS_DIR / 'e2b-fp16-g5g.toml'}: regions: us-west-2 not swept by the "
        "watchdog (watchdog_regions: us-east-1,us-east-2); add it with -c "
        "watchdog_regions=us-east-1,us-east-2,us-west-2 or in cdk.json")


def test_deploying_an_engine_image_in_the_example_account_is_refused(tmp_path):
    exp = experiment.find(EXPERIMENTS_DIR, "e2b-fp16-g5g")
    app = App(outdir=str(tmp_path), context=cdk_context())
    with pytest.raises(experiment.ExperimentError) as caught:
        build(app, [exp], validate=False, account="123456789012")
    assert str(caught.value).startswith(
        f"{exp.source}: ec2.engine_image: '111122223333.dkr.ecr.us-east-1.amazonaws.com/"
        "vllm-sm75:0.27.2rc0' is in AWS's example account 111122223333; push the image")
