"""Starting runs: `python -m runners start`, the deploy trigger's handler and the input they
build, against moto (no real AWS)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
import pytest
from moto import mock_aws

from runners import cli, experiment
from runners.workflow import execution as workflow
from runners.workflow import start
from tests.conftest import EXPERIMENTS_DIR

NOW = datetime(2026, 12, 3, 0, 15, tzinfo=timezone.utc)


@pytest.fixture
def deployed(monkeypatch):
    """One experiment's parameters and a state machine in its first region, in moto."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    exp = experiment.find(EXPERIMENTS_DIR, "e2b-emb4-ml-g6")
    region = exp.regions[0]
    with mock_aws():
        role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")
        machine = boto3.client("stepfunctions", region_name=region).create_state_machine(
            name=workflow.STATE_MACHINE_NAME, roleArn=role["Role"]["Arn"],
            definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}))
        ssm = boto3.client("ssm", region_name=region)
        for name, value in {
            workflow.experiment_parameter(exp.name): json.dumps(exp.to_dict()),
            workflow.STATE_MACHINE_PARAMETER: machine["stateMachineArn"],
            workflow.foundation_parameter("results-bucket"): "results-bucket-1",
        }.items():
            ssm.put_parameter(Name=name, Value=value, Type="String")
        yield exp, region, machine["stateMachineArn"]


def test_start_run_starts_one_execution_with_the_deployed_experiment(deployed):
    exp, region, machine = deployed
    started = start.start_run(exp.name, region, now=NOW)
    sfn = boto3.client("stepfunctions", region_name=region)
    (execution,) = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert started["execution_arn"] == execution["executionArn"]
    run_id = execution["name"]
    assert run_id.startswith("20261203T001500Z-")
    assert started["results"] == f"s3://results-bucket-1/runs/2026-12-03-{exp.name}/{run_id}/"
    payload = json.loads(sfn.describe_execution(executionArn=started["execution_arn"])["input"])
    assert payload["experiment"] == json.loads(json.dumps(exp.to_dict()))
    assert payload["regions"] == list(exp.regions)
    assert payload["limits"]["max_polls"] == (3 * 1800 + 600) // 30
    assert set(payload["functions"]) == {*workflow.PHASE_TIMEOUT_S}
    assert len(json.dumps(payload)) < 8 * 1024


def test_cli_start_prints_the_execution_status_and_results(deployed, capsys):
    exp, region, _ = deployed
    assert cli.main(["start", exp.name]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"execution  arn:aws:states:{region}:")
    assert lines[1] in ("status     RUNNING", "status     SUCCEEDED")
    assert lines[2].startswith(f"results    s3://results-bucket-1/runs/")


def test_cli_start_in_another_region_tries_that_region_first(deployed, capsys):
    exp, _, _ = deployed
    other = exp.regions[1]
    # Nothing is deployed there in this test: the message says what to deploy.
    assert cli.main(["start", exp.name, "--region", other]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: experiment {exp.name!r} is not deployed in {other}; "
                   f"deploy Benchstack-Exp-{exp.name}-{other} first")


def test_cli_start_rejects_a_region_outside_the_experiment(deployed, capsys):
    exp, _, _ = deployed
    assert cli.main(["start", exp.name, "--region", "eu-west-1"]) == 2
    assert "regions: 'eu-west-1' is not one of us-east-2, us-east-1, us-west-2" in \
        capsys.readouterr().err


def test_cli_start_refuses_a_local_experiment(capsys):
    assert cli.main(["start", "local-gemma3-270m"]) == 2
    assert "runs locally" in capsys.readouterr().err


def test_trigger_handler_starts_the_stacks_experiment(deployed, monkeypatch):
    exp, region, machine = deployed
    monkeypatch.setenv("BENCHSTACK_EXPERIMENT", exp.name)
    monkeypatch.setenv("AWS_REGION", region)
    started = start.trigger_handler({}, None)
    assert started["region"] == region
    sfn = boto3.client("stepfunctions", region_name=region)
    assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1


def test_region_order_puts_the_chosen_region_first():
    exp = {"name": "x", "regions": ["a", "b", "c"]}
    assert workflow.region_order(exp, "b") == ["b", "a", "c"]
    assert workflow.region_order(exp, None) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="region 'z' is not in"):
        workflow.region_order(exp, "z")


def test_every_phase_has_a_timeout_under_lambdas_limit():
    from runners.workflow.phases import PHASES

    for phase in (*PHASES, workflow.HANDOFF):
        assert 0 < workflow.phase_timeout_s(phase) < 900
    with pytest.raises(KeyError, match="no timeout"):
        workflow.phase_timeout_s("nope")
