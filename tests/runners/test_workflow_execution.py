"""The synthesized state machine, executed by moto's ASL interpreter with the real Lambda
handler run in-process (tests/workflow_support.py): the control flow on every path."""

from __future__ import annotations

import io
import json
import zipfile

import boto3
import pytest
from moto import mock_aws

from runners.workflow import execution as workflow
from runners.workflow import phases
from stacks import names
from tests.workflow_support import (ACCOUNT, definition_json, run_lambdas_in_process,
                                    wait_for_end)
from tests.runners.workflow_experiments import HOME, OTHER, experiment_snapshot

MEASURED = workflow.measurement_phases()
BUCKETS = {HOME: "results-home", OTHER: "results-other"}
PREFIX = "runs/2026-12-03-e2b-test/20261203T001500Z-abc123/"


class Scenario:
    """Fake phase bodies behind the real run_phase: record each call; fail, refuse
    capacity or stall where told to. Each body gets the Run and returns (result, updates)."""

    def __init__(self, *, fail: str | None = None, no_capacity_in=(), waiting_polls: int = 0,
                 capacity_while_ready_in=(), teardown_retries: int = 0, overrides=None):
        self.calls: list[tuple[str, str]] = []
        self.overrides = overrides or {}  # phase -> body, used as it is
        self.fail, self.no_capacity_in = fail, set(no_capacity_in)
        self.capacity_while_ready_in = set(capacity_while_ready_in)
        self.waiting_polls, self.teardown_retries = waiting_polls, teardown_retries

    def _phase(self, name):
        def run(run):
            (region,) = run.context["regions"]
            placement = run.context["placement"]
            self.calls.append((name, region))
            if name == self.fail:
                raise RuntimeError(f"boom in {name}")
            if name == "provision":
                if region in self.no_capacity_in:
                    return ({"placement": None, "error": {
                        "kind": "capacity", "message": f"no capacity in {region}"}},
                        {"placement": {"region": region}})
                placed = {"region": region, "endpoint_name": "benchstack-x"}
                return {"placement": placed}, {"placement": placed}
            if name == "await_ready":
                polls = sum(1 for c in self.calls if c == ("await_ready", region))
                if region in self.capacity_while_ready_in:
                    return ({"state": "failed", "kind": "capacity", "placement": placement},
                            {"placement": placement})
                if polls <= self.waiting_polls:
                    return None, {"placement": placement}
                return {"state": "ready", "placement": placement}, {"placement": placement}
            if name == "teardown":
                done = sum(1 for c in self.calls if c[0] == "teardown")
                return {"state": "retry-later" if done <= self.teardown_retries
                        else "deleted"}, {}
            return {"measured": name}, {}
        return run

    def install(self, monkeypatch):
        monkeypatch.setattr(phases, "_RUNNERS", {
            name: self.overrides.get(name) or self._phase(name) for name in phases.PHASES})

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def _input(experiment: dict, region: str = HOME, **limits) -> dict:
    payload = workflow.execution_input(
        experiment, run_id="20261203T001500Z-abc123", home_region=region,
        regions=workflow.region_order(experiment, region), results_bucket=BUCKETS[region],
        results_prefix=PREFIX, started_at="2026-12-03T00:15:00Z")
    # No real waiting in tests; the bounds themselves are what is under test.
    payload["limits"].update(poll_seconds=0, teardown_retry_seconds=0, **limits)
    return payload


@pytest.fixture(scope="module")
def benchmark_template(templates):
    return templates[names.benchmark(HOME)]


@pytest.fixture
def aws(benchmark_template, monkeypatch):
    """moto with the workflow deployed in both regions: functions, topic, parameters,
    results buckets."""
    invocations: list = []
    monkeypatch.setenv("AWS_DEFAULT_REGION", HOME)  # what Lambda sets for boto3
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), \
            run_lambdas_in_process(invocations):
        role = boto3.client("iam").create_role(
            RoleName="benchstack-test", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("runners/workflow/lambda_handler.py", "")
        machines, topics = {}, {}
        for region in (HOME, OTHER):
            lam = boto3.client("lambda", region_name=region)
            for name in (workflow.CONTROL_FUNCTION, workflow.DATA_FUNCTION):
                lam.create_function(FunctionName=name, Runtime="python3.12", Role=role,
                                    Handler="runners.workflow.lambda_handler.handler",
                                    Code={"ZipFile": archive.getvalue()})
            topic = topics[region] = boto3.client("sns", region_name=region).create_topic(
                Name="alerts")["TopicArn"]
            sfn = boto3.client("stepfunctions", region_name=region)
            machines[region] = sfn.create_state_machine(
                name=workflow.STATE_MACHINE_NAME, roleArn=role,
                definition=definition_json(benchmark_template, topic_arn=topic))[
                "stateMachineArn"]
            boto3.client("s3", region_name=region).create_bucket(
                Bucket=BUCKETS[region],
                **({} if region == "us-east-1" else
                   {"CreateBucketConfiguration": {"LocationConstraint": region}}))
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
    return fake, _run(aws, _input(experiment_snapshot(backend), **(limits or {})))


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
    assert output["results"]["decode"]["value"]["key"] == f"{PREFIX}decode.json"
    stored = boto3.client("s3").list_objects_v2(Bucket=BUCKETS[HOME], Prefix=PREFIX)
    assert {o["Key"].removeprefix(PREFIX) for o in stored["Contents"]} >= {
        "provision.json", "await_ready.json", "decode.json",
        "cost.json", "teardown.json"}
    assert len(end["output"]) < 16 * 1024  # S3 keys only: far under 256 KiB
    assert {fn for fn, _ in aws["invocations"]} == {workflow.CONTROL_FUNCTION}


def test_the_provider_knows_the_execution_it_runs_in_for_the_watchdogs_tag(aws, monkeypatch):
    seen = []
    fake = Scenario()
    provision = fake._phase("provision")

    def spy(run):
        seen.append(run.provider.execution_arn)
        return provision(run)
    fake.overrides["provision"] = spy
    fake.install(monkeypatch)
    end = _run(aws, _input(experiment_snapshot("sagemaker")))
    assert end["status"] == "SUCCEEDED", end
    assert seen == [end["executionArn"]]


@pytest.mark.parametrize("failing", ["provision", "await_ready"])
def test_a_placement_step_that_raises_reaches_teardown_and_fails_with_the_cause(
        aws, monkeypatch, failing):
    scenario, end = _execute(aws, monkeypatch, fail=failing)
    assert end["status"] == "FAILED"
    assert end["error"] == "PhaseFailed"
    assert f"RuntimeError: boom in {failing}" in end["cause"]
    called = scenario.names()
    assert called[-1] == "teardown" and called.count("teardown") == 1
    assert called[:-1] == list(phases.PHASES[:phases.PHASES.index(failing) + 1])
    assert "report" not in called


@pytest.mark.parametrize("failing", MEASURED)
def test_a_measurement_phase_that_raises_is_recorded_and_the_run_goes_on(aws, monkeypatch,
                                                                         failing):
    """As in the local driver: the other phases' results still count."""
    scenario, end = _execute(aws, monkeypatch, fail=failing)
    assert end["status"] == "SUCCEEDED", end
    assert scenario.names() == list(phases.PHASES)
    value = json.loads(end["output"])["results"][failing]["value"]
    assert value["state"] == "failed" and f"boom in {failing}" in value["error"]
    record = json.loads(boto3.client("s3").get_object(
        Bucket=BUCKETS[HOME], Key=f"{PREFIX}{failing}.json")["Body"].read())
    assert "RuntimeError: boom" in record["error"] and "Traceback" in record["traceback"]


@pytest.mark.parametrize("crashing", MEASURED)
def test_a_measurement_task_that_crashes_reaches_teardown_and_fails_with_the_cause(
        aws, monkeypatch, crashing):
    """The task itself fails (out of memory, a bug outside the phase): Catch -> teardown."""
    original = phases.run_phase

    def run_phase(name, context, **kwargs):
        if name == crashing:
            raise MemoryError(f"task {name} ran out of memory")
        return original(name, context, **kwargs)
    monkeypatch.setattr(phases, "run_phase", run_phase)
    scenario, end = _execute(aws, monkeypatch)
    assert end["status"] == "FAILED"
    assert end["error"] == "MemoryError" and f"task {crashing} ran out" in end["cause"]
    called = scenario.names()
    assert called[-1] == "teardown" and called.count("teardown") == 1
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
        "await_ready", workflow.SCALE_OUT_PLAN, *(p for p in MEASURED if p != "cost")}
    assert used["provision"] == used["teardown"] == workflow.CONTROL_FUNCTION


def test_ec2_without_capacity_hands_the_run_to_the_next_regions_workflow(aws, monkeypatch):
    """The in-VPC client must sit in the instance's region: the run continues in the
    other region's state machine, which places, measures and reports there."""
    boto3.client("ssm", region_name=OTHER).put_parameter(
        Name=workflow.experiment_parameter("e2b-test"), Value=json.dumps(experiment_snapshot("ec2")),
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
    failed = {"region": HOME, "reason": "model load error"}
    scenario, end = _execute(aws, monkeypatch, overrides={"await_ready": lambda run: (
        {"state": "failed", "message": "model load error", "placement": failed},
        {"placement": failed})})
    assert end["status"] == "FAILED"
    assert end["error"] == "PlacementFailed"
    assert json.loads(end["cause"]) == failed
    assert scenario.names() == ["provision", "teardown"]


def test_a_big_phase_result_stays_in_s3_and_the_state_keeps_its_key(aws, monkeypatch):
    big = {"samples": "x" * (workflow.MAX_RESULT_BYTES + 1)}
    scenario, end = _execute(aws, monkeypatch, overrides={"decode": lambda run: (big, {})})
    assert end["status"] == "SUCCEEDED", end
    assert json.loads(end["output"])["results"]["decode"]["value"]["key"] == f"{PREFIX}decode.json"
    record = boto3.client("s3").get_object(Bucket=BUCKETS[HOME], Key=f"{PREFIX}decode.json")
    assert json.loads(record["Body"].read()) == big


def test_every_attempt_of_a_repeated_step_is_kept(aws, monkeypatch):
    """A second region's provision and a retried teardown write beside the first."""
    scenario, end = _execute(aws, monkeypatch, no_capacity_in=[HOME], teardown_retries=1)
    assert end["status"] == "SUCCEEDED", end
    s3 = boto3.client("s3")
    read = lambda key: json.loads(s3.get_object(Bucket=BUCKETS[HOME], Key=PREFIX + key)[
        "Body"].read())
    assert read("provision.json")["error"]["kind"] == "capacity"
    assert read("provision.2.json")["placement"]["region"] == OTHER
    assert read("teardown.json")["state"] == "retry-later"
    assert read("teardown.2.json")["state"] == "deleted"


class _LoopbackProvider:
    """What a placed endpoint hands out, pointed at the loopback server."""

    def __init__(self, base_url):
        self.base_url = base_url

    def client(self, placement):
        from runners.backends.openai_http import OpenAIHTTPClient

        return OpenAIHTTPClient(self.base_url, "loopback")


def test_a_level_above_one_runner_runs_as_a_map_of_shards_merged_into_one_level(
        aws, monkeypatch, loopback):
    """rates [2, 6] with runner_max_rate 4: level 1 is sent by 2 shard invocations that
    share one start instant; load merges their records, level 0 it sends itself."""
    from runners import providers
    from runners.measure.load import scale_out

    server = loopback()
    monkeypatch.setattr(scale_out, "LEAD_S", 1.0)
    monkeypatch.setattr(providers, "for_experiment",
                        lambda exp, **kw: _LoopbackProvider(server.base_url))
    snapshot = experiment_snapshot("sagemaker")
    snapshot["benchmark"].update(load_mode="rate", rates=[2.0, 6.0], runner_max_rate=4.0,
                                 load_duration_s=3.0, load_warmup_s=0.5, load_cooldown_s=0.5,
                                 arrival="constant", load_tokens=8, context_lengths=[])
    fake = Scenario(overrides={"load": phases._RUNNERS["load"]})
    fake.install(monkeypatch)
    end = _run(aws, _input(snapshot))
    assert end["status"] == "SUCCEEDED", end
    shard_events = [e for _, e in aws["invocations"] if e["phase"] == workflow.LOAD_SHARD]
    assert sorted(e["shard"]["shard"] for e in shard_events) == [0, 1]
    assert {e["shard"]["level"] for e in shard_events} == {1}
    assert len({e["shard"]["start_epoch"] for e in shard_events}) == 1  # one instant
    assert all(e["placement"] == {"region": HOME, "endpoint_name": "benchstack-x"}
               for e in shard_events)
    s3 = boto3.client("s3")
    load = json.loads(s3.get_object(Bucket=BUCKETS[HOME], Key=f"{PREFIX}load.json")["Body"]
                      .read())
    first, second = load["levels"]
    assert first.get("shards") is None and first["scheduled"] == 6
    # The Map ran both shards at once: together they sent the level's rate, on time.
    assert second["sent_per_s"] == pytest.approx(6.0, rel=0.1)
    assert second["scheduling_lag_s"]["p99"] < 0.1
    assert second["shards"] == 2 and second["scheduled"] == 18  # 6/s for 3 s, split 9 + 9
    assert second["requests"] + second["cut_requests"] == 18 and second["errors"] == 0
    assert load["scale_out_notes"] == []
    keys = {o["Key"].removeprefix(PREFIX) for o in
            s3.list_objects_v2(Bucket=BUCKETS[HOME], Prefix=PREFIX)["Contents"]}
    assert {"load/shard-1-0.json", "load/shard-1-1.json", "requests/load.shard-1-0.jsonl",
            "requests/load.shard-1-1.jsonl"} <= keys

