"""BenchmarkStack and the workflow: the properties that matter, asserted directly, and
the rendered definition checked by asl-validator (npm)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from benchstack_constructs import runner_bundle
from runners.workflow import execution as workflow
from runners.workflow.phases import PHASES
from stacks import names
from tests.conftest import ROOT
from tests.infra.templates import only, resources
from tests.workflow_support import definition_json

REGION = "us-east-1"  # has SageMaker, EC2 and Bedrock experiments
ASL_VALIDATOR = ROOT / "node_modules" / ".bin" / "asl-validator"


@pytest.fixture(scope="module")
def benchmark(templates):
    return templates[names.benchmark(REGION)]


@pytest.fixture(scope="module")
def definition(benchmark) -> dict:
    return json.loads(definition_json(benchmark, topic_arn="arn:aws:sns:us-east-1:1:alerts"))


def _lambda_tasks(definition: dict) -> dict[str, dict]:
    return {name: s for name, s in definition["States"].items()
            if s["Type"] == "Task" and s["Resource"].endswith(":states:::lambda:invoke")}


def test_definition_passes_asl_validator(definition, tmp_path):
    path = tmp_path / "definition.json"
    path.write_text(json.dumps(definition))
    out = subprocess.run([str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_asl_validator_rejects_a_broken_definition(definition, tmp_path):
    """The validator really checks: a Next to a state that does not exist fails."""
    broken = json.loads(json.dumps(definition))
    broken["States"]["Init"]["Next"] = "Nowhere"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    out = subprocess.run([str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0


def test_every_phase_is_a_task_in_order_from_the_phase_list(definition):
    tasks = _lambda_tasks(definition)
    assert set(PHASES) | {"HandOff", "LoadScaleOut", "CheckInstance"} == set(tasks)
    for name, task in tasks.items():
        phase = task["Parameters"]["Payload"]["phase"]
        assert task["Parameters"]["FunctionName.$"] == f"$.functions.{phase}"
    measured = workflow.measurement_phases()
    for here, there in zip(measured, measured[1:]):
        # load is entered through its scale-out steps (test below)
        assert definition["States"][here]["Next"] == ("LoadScaleOut" if there == "load"
                                                      else there)
    assert definition["States"][measured[-1]]["Next"] == "MeasuredAll"


def test_load_is_entered_through_a_scale_out_map_that_cannot_fail_the_run(definition):
    states = definition["States"]
    assert states["LoadScaleOut"]["Next"] == "ScaleOut"
    assert states["LoadScaleOut"]["Catch"][0]["Next"] == "teardown"
    (choice,) = states["ScaleOut"]["Choices"]
    assert (choice["Variable"], choice["BooleanEquals"], choice["Next"]) == (
        "$.scale_out.enabled", True, "LoadShards")
    assert states["ScaleOut"]["Default"] == "load"
    shards = states["LoadShards"]
    assert shards["Type"] == "Map" and shards["ItemsPath"] == "$.scale_out.items"
    assert shards["ItemSelector"]["shard.$"] == "$$.Map.Item.Value"
    assert shards.get("MaxConcurrency", 0) == 0  # every shard at once, to meet its instant
    assert shards["Next"] == "load" and shards["Catch"][0]["Next"] == "load"
    shard = shards["ItemProcessor"]["States"]["LoadShard"]
    assert shard["Parameters"]["FunctionName.$"] == f"$.functions.{workflow.LOAD_SHARD}"
    assert shard["TimeoutSeconds"] == workflow.phase_timeout_s(workflow.LOAD_SHARD) < 900


def test_every_task_retries_lambda_errors_with_full_jitter(definition):
    for name, task in _lambda_tasks(definition).items():
        (retry,) = task["Retry"]
        assert "Lambda.TooManyRequestsException" in retry["ErrorEquals"], name
        assert "Lambda.ServiceException" in retry["ErrorEquals"], name
        assert retry["JitterStrategy"] == "FULL" and retry["BackoffRate"] == 2
        assert retry["MaxAttempts"] == 6 and retry["MaxDelaySeconds"] == 60


def test_every_task_before_teardown_catches_into_teardown(definition):
    for name, task in _lambda_tasks(definition).items():
        (catch,) = task["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"]
        if name == "report":
            assert catch["Next"] == "ReportFailed"  # teardown already ran
        elif name == "teardown":
            assert catch["Next"] == "TeardownAttemptsLeft"  # retried, bounded, alerted
        elif name == "HandOff":
            assert catch["Next"] == "Failed"  # nothing placed yet; the last region torn down
        else:
            assert catch["Next"] == "teardown", name
            assert catch["ResultPath"] == "$.error"
    failed = definition["States"]["Failed"]
    assert failed["CausePath"] == "$.error.Cause" and failed["ErrorPath"] == "$.error.Error"


def test_task_timeouts_are_per_phase_and_under_lambdas_limit(definition, benchmark):
    for name, task in _lambda_tasks(definition).items():
        phase = task["Parameters"]["Payload"]["phase"]
        assert task["TimeoutSeconds"] == workflow.PHASE_TIMEOUT_S[phase] < 900
    for fn in resources(benchmark, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        assert props["Timeout"] < 900
        assert props["Runtime"] == "python3.12"
        assert props["Handler"] == "runners.workflow.lambda_handler.handler"
        assert "ManagedPolicyArns" not in str(benchmark["Resources"][
            props["Role"]["Fn::GetAtt"][0]])


def test_the_loops_are_bounded_by_the_input_limits(definition):
    states = definition["States"]
    polls = states["PollsLeft"]["Choices"][0]
    assert polls["Variable"] == "$.loop.polls"
    assert polls["NumericGreaterThanEqualsPath"] == "$.limits.max_polls"
    assert states["WaitBeforePoll"]["SecondsPath"] == "$.limits.poll_seconds"
    teardowns = states["TeardownAttemptsLeft"]["Choices"][0]
    assert teardowns["NumericLessThanPath"] == "$.limits.teardown_attempts"
    assert states["TeardownAttemptsLeft"]["Default"] == "AlertTeardown"
    regions = states["RegionsLeft"]["Choices"][0]
    assert regions["NumericLessThanPath"] == "$.loop.region_count"


def test_results_stay_small_in_the_state(definition):
    for name, task in _lambda_tasks(definition).items():
        assert "ResultSelector" in task and "ResultPath" in task, name
        assert "$.Payload" in json.dumps(task["ResultSelector"])


def test_state_machine_logs_everything_and_traces(benchmark):
    props = only(benchmark, "AWS::StepFunctions::StateMachine")["Properties"]
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["StateMachineName"] == workflow.STATE_MACHINE_NAME
    assert "TimeoutSeconds" not in props.get("DefinitionString", "")  # no global timeout
    for group in resources(benchmark, "AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == 30


def _statements(template: dict, role_prefix: str) -> list[dict]:
    found = []
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if logical_id.startswith(role_prefix):
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def _by_action(statements: list[dict], action: str) -> list[dict]:
    return [s for s in statements if action in (s["Action"] if isinstance(s["Action"], list)
                                                else [s["Action"]])]


def test_control_role_is_scoped_by_prefix_and_tag(benchmark):
    statements = _statements(benchmark, "ControlRole")
    (create,) = _by_action(statements, "sagemaker:CreateEndpoint")
    ends = sorted(json.dumps(r).rsplit(":", 1)[-1] for r in create["Resource"])
    assert ends == ['endpoint-config/*"]]}', 'endpoint/bs-*"]]}']  # runners/providers/sagemaker/names.py
    (terminate,) = _by_action(statements, "ec2:TerminateInstances")
    assert terminate["Condition"] == {
        "StringEquals": {"aws:ResourceTag/benchstack:managed": "true"}}
    launches = _by_action(statements, "ec2:RunInstances")
    tagged = [s for s in launches if "Condition" in s]
    assert tagged[0]["Condition"] == {"StringEquals": {"aws:RequestTag/benchstack:managed": "true"}}
    assert "instance/*" in json.dumps(tagged[0]["Resource"])
    untagged = [s for s in launches if "Condition" not in s]
    assert "instance/*" not in json.dumps(untagged)  # instances only with the tag
    (bedrock,) = _by_action(statements, "bedrock:InvokeModel")
    assert "foundation-model/amazon.nova-micro-v1:0" in json.dumps(bedrock["Resource"])
    (put,) = _by_action(statements, "s3:PutObject")
    assert json.dumps(put["Resource"]).endswith('/runs/*"]]}')
    assert not _by_action(statements, "s3:DeleteObject")
    (params,) = _by_action(statements, "ssm:GetParameter")
    assert "parameter/benchstack/*" in json.dumps(params["Resource"])
    assert _by_action(statements, "sns:Publish")


def test_data_role_reaches_only_s3_and_its_network(benchmark):
    actions = {a for s in _statements(benchmark, "DataRole")
               for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert {a.split(":")[0] for a in actions} == {"s3", "ec2", "logs"}
    assert not {a for a in actions if a.startswith("ec2:") and "NetworkInterface" not in a
                and "PrivateIp" not in a}


def test_in_vpc_runner_reaches_engines_on_the_engine_ports_only(benchmark, experiments):
    rules = [r["Properties"] for r in
             resources(benchmark, "AWS::EC2::SecurityGroupIngress").values()]
    ports = {e.ec2.engine_port for e in experiments if e.ec2 and REGION in e.regions}
    assert ports == {8000, 8080}
    assert {(r["FromPort"], r["ToPort"]) for r in rules} == {(p, p) for p in ports}
    for props in rules:
        assert props["IpProtocol"] == "tcp"
        assert "CidrIp" not in props and "DataSecurityGroup" in json.dumps(
            props["SourceSecurityGroupId"])
    data_fn = [f for f in resources(benchmark, "AWS::Lambda::Function").values()
               if f["Properties"].get("FunctionName") == workflow.DATA_FUNCTION][0]
    assert data_fn["Properties"]["VpcConfig"]["SubnetIds"]


def test_run_end_is_published_to_the_alerts_topic(benchmark):
    rule = only(benchmark, "AWS::Events::Rule")["Properties"]
    assert rule["EventPattern"]["detail"]["status"] == ["SUCCEEDED", "FAILED", "TIMED_OUT",
                                                        "ABORTED"]
    assert rule["EventPattern"]["detail-type"] == ["Step Functions Execution Status Change"]
    (target,) = rule["Targets"]
    assert "AlertsTopic" in json.dumps(target["Arn"])


def test_only_the_first_region_starts_a_run_on_deploy(templates, experiments):
    for exp in (e for e in experiments if e.regions):
        for region in exp.regions:
            template = templates[names.experiment(exp.name, region)]
            triggers = resources(template, "Custom::Trigger")
            assert len(triggers) == (1 if region == exp.regions[0] else 0), (exp.name, region)
    template = templates[names.experiment("e2b-emb4-ml-g6", "us-east-2")]
    trigger = only(template, "Custom::Trigger")
    definition_id = [k for k, v in template["Resources"].items()
                     if v["Type"] == "AWS::SSM::Parameter"][0]
    assert definition_id in trigger["DependsOn"]
    starter = [f for f in resources(template, "AWS::Lambda::Function").values()
               if f["Properties"].get("Handler") == "runners.workflow.start.trigger_handler"]
    variables = starter[0]["Properties"]["Environment"]["Variables"]
    assert variables["BENCHSTACK_EXPERIMENT"] == "e2b-emb4-ml-g6"
    # The definition's digest is in the function, so changing the experiment re-runs it.
    definition = template["Resources"][definition_id]["Properties"]["Value"]
    assert variables["BENCHSTACK_DEFINITION_SHA256"] == hashlib.sha256(
        definition.encode()).hexdigest()
    assert trigger["Properties"]["ExecuteOnHandlerChange"] is True


def test_runner_asset_holds_the_runners_package_and_the_pinned_sdk(assembly):
    benchmark = assembly.get_stack_by_name(names.benchmark(REGION))
    manifest = json.loads((Path(assembly.directory) /
                           f"{benchmark.stack_name}.assets.json").read_text())
    folders = [f["source"]["path"] for f in manifest["files"].values()
               if f["source"].get("packaging") == "zip"]
    assert folders
    for folder in folders:
        root = Path(assembly.directory) / folder
        packages = sorted(p.name for p in root.iterdir() if not p.name.endswith(".dist-info"))
        assert packages == ["boto3", "botocore", "dateutil", "jmespath", "runners",
                            "s3transfer", "six.py", "urllib3"], packages
        assert (root / "runners" / "workflow" / "lambda_handler.py").exists()
        assert not list(root.rglob("__pycache__")) and not list(root.rglob("*.sh"))
        pinned = runner_bundle.pins()
        for name in runner_bundle.PINNED:
            (info,) = root.glob(f"{name}-*.dist-info")
            assert info.name == f"{name}-{pinned[name]}.dist-info"
        version = (root / "botocore" / "__init__.py").read_text()
        assert f"__version__ = '{pinned['botocore']}'" in version


def test_the_control_function_caches_prices_where_lambda_can_write(benchmark):
    """The code folder is read-only in Lambda: the Pricing API cache lives in /tmp."""
    (control,) = [f["Properties"] for f in resources(benchmark, "AWS::Lambda::Function").values()
                  if f["Properties"].get("FunctionName") == workflow.CONTROL_FUNCTION]
    cache = control["Environment"]["Variables"]["BENCHSTACK_PRICE_CACHE"]
    assert cache.startswith("/tmp/")
