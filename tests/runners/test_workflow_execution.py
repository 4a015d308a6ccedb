"""The synthesized state machine, executed by moto's ASL interpreter with the real Lambda
handler run in-process (tests/workflow_support.py): the control flow on every path."""

from __future__ import annotations

import io
import json
import zipfile

import boto3
import pytest
from moto import mock_aws

from runners import phases, workflow
from runners.providers.base import ProvisionError
from stacks import names
from tests.workflow_support import (ACCOUNT, definition_json, run_lambdas_in_process,
                                    wait_for_end)

HOME, OTHER = "us-east-2", "us-east-1"
MEASURED = workflow.measurement_phases()
BUCKETS = {HOME: "results-home", OTHER: "results-other"}


class Scenario:
    """Fake phases: record each call; fail, refuse capacity or stall where told to."""

    def __init__(self, *, fail: str | None = None, no_capacity_in=(), waiting_polls: int = 0,
                 capacity_while_ready_in=(), teardown_retries: int = 0, overrides=None):
        self.calls: list[tuple[str, str]] = []
        self.overrides = overrides or {}  # phase -> function, used as it is
        self.fail, self.no_capacity_in = fail, set(no_capacity_in)
        self.capacity_while_ready_in = set(capacity_while_ready_in)
        self.waiting_polls, self.teardown_retries = waiting_polls, teardown_retries

    def _phase(self, name):
        def run(event):
            region = event.get("region")
            self.calls.append((name, region))
            if name == self.fail:
                raise RuntimeError(f"boom in {name}")
            if name == "provision":
                if region in self.no_capacity_in:
                    raise ProvisionError("capacity", f"no capacity in {region}",
                                         {"placement": {"region": region}})
                return {"placement": {"region": region, "endpoint": "benchstack-x"}}
            if name == "await_ready":
                polls = sum(1 for c in self.calls if c == ("await_ready", region))
                if region in self.capacity_while_ready_in:
                    return {"state": "failed", "kind": "capacity", "placement": event["placement"]}
                state = "waiting" if polls <= self.waiting_polls else "ready"
                return {"state": state, "placement": event["placement"]}
            if name == "teardown":
                done = sum(1 for c in self.calls if c[0] == "teardown")
                return {"state": "retry-later" if done <= self.teardown_retries else "deleted"}
            return {"key": f"{event['run']['results_prefix']}{name}.json"}
        return run

    def install(self, monkeypatch):
        monkeypatch.setattr(phases, "PHASE_FUNCTIONS", {
            name: self.overrides.get(name) or self._phase(name) for name in phases.PHASES})

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def _experiment(backend: str) -> dict:
    exp = {"name": "e2b-test", "backend": backend, "regions": [HOME, OTHER], "ttl_hours": 3.0,
           "sagemaker": None}
    if backend == "sagemaker":
        exp["sagemaker"] = {"creating_alert_minutes": 30, "timeouts": {
            "model_data_download_s": 60, "container_startup_health_check_s": 60,
            "variant_instance_provision_s": 60}}
    return exp


def _input(experiment: dict, region: str = HOME, **limits) -> dict:
    payload = workflow.execution_input(
        experiment, run_id="20261203T001500Z-abc123", home_region=region,
        regions=workflow.region_order(experiment, region), results_bucket=BUCKETS[region],
        results_prefix="runs/2026-12-03-e2b-test/20261203T001500Z-abc123/")
    # No real waiting in tests; the bounds themselves are what is under test.
    payload["limits"].update(poll_seconds=0, teardown_retry_seconds=0, **limits)
    return payload


@pytest.fixture(scope="module")
def benchmark_template(templates):
    return templates[names.benchmark(HOME)]


@pytest.fixture
def aws(benchmark_template):
    """moto with the workflow deployed in both regions: functions, topic, parameters."""
    invocations: list = []
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), \
            run_lambdas_in_process(invocations):
        role = boto3.client("iam").create_role(
            RoleName="benchstack-test", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("runners/lambda_handler.py", "")
        machines, topics = {}, {}
        for region in (HOME, OTHER):
            lam = boto3.client("lambda", region_name=region)
            for name in (workflow.CONTROL_FUNCTION, workflow.DATA_FUNCTION):
                lam.create_function(FunctionName=name, Runtime="python3.12", Role=role,
                                    Handler="runners.lambda_handler.handler",
                                    Code={"ZipFile": archive.getvalue()})
            topic = topics[region] = boto3.client("sns", region_name=region).create_topic(
                Name="alerts")["TopicArn"]
            sfn = boto3.client("stepfunctions", region_name=region)
            machines[region] = sfn.create_state_machine(
                name=workflow.STATE_MACHINE_NAME, roleArn=role,
                definition=definition_json(benchmark_template, topic_arn=topic))[
                "stateMachineArn"]
            ssm = boto3.client("ssm", region_name=region)
            for key, value in {workflow.STATE_MACHINE_PARAMETER: machines[region],
                               workflow.foundation_parameter("results-bucket"): BUCKETS[region],
                               workflow.experiment_parameter("e2b-test"): "{}"}.items():
                ssm.put_parameter(Name=key, Value=value, Type="String")
        yield {"machines": machines, "invocations": invocations, "topics": topics}


def _execute(aws, monkeypatch, backend: str = "sagemaker", limits: dict | None = None,
             **scenario) -> tuple[Scenario, dict]:
    """Run one execution from the home region with fake phases set up by `scenario`."""
    fake = Scenario(**scenario)
    fake.install(monkeypatch)
    return fake, _run(aws, _input(_experiment(backend), **(limits or {})))


def _run(aws, payload: dict, region: str = HOME) -> dict:
    sfn = boto3.client("stepfunctions", region_name=region)
    arn = sfn.start_execution(stateMachineArn=aws["machines"][region],
                              input=json.dumps(payload))["executionArn"]
    return wait_for_end(sfn, arn)


def test_happy_path_runs_every_phase_in_order_then_tears_down_and_reports(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch)
    assert end["status"] == "SUCCEEDED", end
    assert scenario.names() == list(phases.PHASES)
    output = json.loads(end["output"])
    assert output["results"]["decode"]["value"]["key"].endswith("/decode.json")
    assert len(end["output"]) < 16 * 1024  # S3 keys only: far under 256 KiB
    assert {fn for fn, _ in aws["invocations"]} == {workflow.CONTROL_FUNCTION}


@pytest.mark.parametrize("failing", ["provision", "await_ready", *MEASURED])
def test_a_failure_in_any_phase_reaches_teardown_and_fails_with_the_cause(aws, monkeypatch,
                                                                          failing):
    scenario, end = _execute(aws, monkeypatch, fail=failing)
    assert end["status"] == "FAILED"
    assert end["error"] == "RuntimeError"
    assert f"boom in {failing}" in end["cause"]
    called = scenario.names()
    assert called[-1] == "teardown" and called.count("teardown") == 1
    assert called[:-1] == list(phases.PHASES[:phases.PHASES.index(failing) + 1])
    assert "report" not in called


def test_the_await_loop_ends_after_max_polls_and_alerts_once(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, limits=dict(max_polls=4, alert_after_polls=2),
                             waiting_polls=10_000)
    assert end["status"] == "FAILED"
    assert end["error"] == "ReadyTimedOut"
    assert scenario.names() == ["provision"] + ["await_ready"] * 5 + ["teardown"]
    from moto.sns.models import sns_backends

    sent = sns_backends[ACCOUNT][HOME].topics[aws["topics"][HOME]].sent_notifications
    assert [subject for _, _, subject, _, _ in sent] == [
        "benchstack: placement slow to become ready"]
    assert "still not ready in us-east-2 after 2 polls of 0 s" in sent[0][1]
    assert end["cause"] == "not ready after 4 polls in us-east-2"


def test_waiting_then_ready_measures(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, waiting_polls=3)
    assert end["status"] == "SUCCEEDED"
    assert scenario.names().count("await_ready") == 4


def test_no_capacity_moves_to_the_next_region_after_tearing_down(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, no_capacity_in=[HOME])
    assert end["status"] == "SUCCEEDED", end
    assert scenario.calls[:3] == [("provision", HOME), ("teardown", HOME), ("provision", OTHER)]
    assert scenario.calls[-1] == ("report", OTHER)


def test_capacity_failure_while_waiting_also_moves_on(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, capacity_while_ready_in=[HOME])
    assert end["status"] == "SUCCEEDED"
    assert scenario.calls[:4] == [("provision", HOME), ("await_ready", HOME),
                                  ("teardown", HOME), ("provision", OTHER)]


def test_no_capacity_anywhere_fails_after_trying_every_region(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, no_capacity_in=[HOME, OTHER])
    assert end["status"] == "FAILED"
    assert end["error"] == "NoCapacity"
    assert scenario.calls == [("provision", HOME), ("teardown", HOME),
                              ("provision", OTHER), ("teardown", OTHER)]


def test_teardown_is_retried_while_it_says_retry_later(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, teardown_retries=2)
    assert end["status"] == "SUCCEEDED"
    assert scenario.names().count("teardown") == 3


def test_teardown_that_never_confirms_is_bounded_alerted_and_failed(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, limits=dict(teardown_attempts=3),
                             teardown_retries=10_000)
    assert end["status"] == "FAILED"
    assert end["error"] == "TeardownIncomplete"
    assert scenario.names().count("teardown") == 4  # the first try and 3 retries
    assert "report" not in scenario.names()
    from moto.sns.models import sns_backends

    sent = sns_backends[ACCOUNT][HOME].topics[aws["topics"][HOME]].sent_notifications
    (alert,) = [message for _, message, subject, _, _ in sent
                if subject == "benchstack: teardown incomplete"]
    assert "teardown in us-east-2 did not confirm deletion after 3 attempts" in alert


def test_ec2_measures_through_the_in_vpc_function(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, "ec2")
    assert end["status"] == "SUCCEEDED"
    used = {event["phase"]: fn for fn, event in aws["invocations"]}
    assert {p for p, fn in used.items() if fn == workflow.DATA_FUNCTION} == {
        "await_ready", *(p for p in MEASURED if p != "cost")}
    assert used["provision"] == used["teardown"] == workflow.CONTROL_FUNCTION


def test_ec2_without_capacity_hands_the_run_to_the_next_regions_workflow(aws, monkeypatch):
    """The in-VPC client must sit in the instance's region: the run continues in the
    other region's state machine, which places, measures and reports there."""
    boto3.client("ssm", region_name=OTHER).put_parameter(
        Name=workflow.experiment_parameter("e2b-test"), Value=json.dumps(_experiment("ec2")),
        Type="String", Overwrite=True)
    scenario, end = _execute(aws, monkeypatch, "ec2", no_capacity_in=[HOME])
    assert end["status"] == "SUCCEEDED"
    handoff = json.loads(end["output"])["handoff"]
    assert handoff["results"].startswith(f"s3://{BUCKETS[OTHER]}/runs/2026-12-03-e2b-test/")
    sfn = boto3.client("stepfunctions", region_name=OTHER)
    continued = wait_for_end(sfn, handoff["execution_arn"])
    assert continued["status"] == "SUCCEEDED", continued
    assert scenario.calls[:2] == [("provision", HOME), ("teardown", HOME)]
    assert scenario.calls[2] == ("provision", OTHER)
    assert scenario.calls[-1] == ("report", OTHER)


def test_a_failed_hand_off_fails_the_run_with_its_cause(aws, monkeypatch):
    boto3.client("ssm", region_name=OTHER).delete_parameter(
        Name=workflow.STATE_MACHINE_PARAMETER)
    scenario, end = _execute(aws, monkeypatch, "ec2", no_capacity_in=[HOME])
    assert end["status"] == "FAILED"
    assert end["error"] == "StartError"
    assert "deploy Benchstack-Benchmark-us-east-1 first" in end["cause"]
    assert scenario.calls == [("provision", HOME), ("teardown", HOME)]


def test_a_placement_that_fails_to_become_ready_is_torn_down(aws, monkeypatch):
    scenario, end = _execute(aws, monkeypatch, overrides={"await_ready": lambda event: {
        "state": "failed", "placement": {"reason": "model load error"}}})
    assert end["status"] == "FAILED"
    assert end["error"] == "PlacementFailed"
    assert json.loads(end["cause"]) == {"reason": "model load error"}
    assert scenario.names() == ["provision", "teardown"]


def test_a_phase_result_too_big_for_the_state_fails_the_run_cleanly(aws, monkeypatch):
    too_big = {"samples": "x" * (workflow.MAX_RESULT_BYTES + 1)}
    scenario, end = _execute(aws, monkeypatch, overrides={"decode": lambda event: too_big})
    assert end["status"] == "FAILED"
    assert end["error"] == "PhaseContractError"
    assert scenario.names()[-1] == "teardown"
