"""Starting benchmark executions: `python -m runners start`, the deploy trigger, and the
hand-off of a run to another region's state machine. One code path for all three, so a
run started by `cdk deploy` has the same input as one started by hand.

The experiment comes from the definition its stack stored in SSM (what was deployed),
the state machine and results bucket from the parameters their stacks publish.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone
from typing import Any

import boto3
from botocore.exceptions import ClientError

from runners.workflow import execution as workflow


class StartError(RuntimeError):
    """The run cannot start (a stack is missing); the message says what to deploy."""


def _parameter(ssm, name: str, missing: str) -> str:
    try:
        return ssm.get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ParameterNotFound":
            raise StartError(missing) from None
        raise


def _regional(session, region: str, experiment_name: str) -> dict[str, str]:
    """What a region publishes: the deployed experiment, the state machine, the bucket."""
    ssm = session.client("ssm", region_name=region)
    return {
        "experiment": _parameter(
            ssm, workflow.experiment_parameter(experiment_name),
            f"experiment {experiment_name!r} is not deployed in {region}; "
            f"deploy Benchstack-Exp-{experiment_name}-{region} first"),
        "state_machine_arn": _parameter(
            ssm, workflow.STATE_MACHINE_PARAMETER,
            f"no benchmark workflow in {region}; deploy Benchstack-Benchmark-{region} first"),
        "results_bucket": _parameter(
            ssm, workflow.foundation_parameter("results-bucket"),
            f"no foundation in {region}; deploy Benchstack-Foundation-{region} first"),
    }


def _start(session, region: str, found: dict[str, str], payload: dict[str, Any]) -> dict:
    sfn = session.client("stepfunctions", region_name=region)
    run = payload["run"]
    arn = sfn.start_execution(stateMachineArn=found["state_machine_arn"],
                              name=run["run_id"], input=json.dumps(payload))["executionArn"]
    status = sfn.describe_execution(executionArn=arn)["status"]
    return {"execution_arn": arn, "status": status, "region": region,
            "results": f"s3://{run['results_bucket']}/{run['results_prefix']}"}


def start_run(experiment_name: str, region: str, *, session=None,
              now: datetime | None = None) -> dict[str, Any]:
    """Start one execution in `region`, trying the experiment's other regions after it."""
    session = session or boto3.Session()
    now = now or datetime.now(timezone.utc)
    found = _regional(session, region, experiment_name)
    experiment = json.loads(found["experiment"])
    run_id = workflow.new_run_id(now, secrets.token_hex(3))
    payload = workflow.execution_input(
        experiment, run_id=run_id, home_region=region,
        regions=workflow.region_order(experiment, region),
        results_bucket=found["results_bucket"],
        results_prefix=workflow.results_prefix(experiment["name"], run_id, now),
        started_at=now.astimezone(timezone.utc).isoformat(timespec="seconds").replace(
            "+00:00", "Z"),
    )
    return _start(session, region, found, payload)


def hand_off(event: dict[str, Any], *, session=None) -> dict[str, Any]:
    """Continue a run in the region at `region_index`, whose own state machine and in-VPC
    function can reach what it places there. Results go to that region's bucket (the
    VPC reaches S3 only in its own region), under the same run id and prefix."""
    session = session or boto3.Session()
    index = event["region_index"]
    region = event["regions"][index]
    experiment = event["experiment"]
    found = _regional(session, region, experiment["name"])
    run = event["run"]
    payload = workflow.execution_input(
        experiment, run_id=run["run_id"], home_region=region, regions=event["regions"],
        results_bucket=found["results_bucket"], results_prefix=run["results_prefix"],
        started_at=run.get("started_at"), region_index=index,
    )
    return _start(session, region, found, payload)


def trigger_handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """The deploy trigger: start the experiment this stack deployed, in this region."""
    from runners import sdk

    sdk.require_botocore()
    started = start_run(os.environ["BENCHSTACK_EXPERIMENT"], os.environ["AWS_REGION"])
    print(json.dumps(started))  # the run's address, in the trigger's log
    return started


def describe(started: dict[str, Any]) -> str:
    """What `python -m runners start` prints."""
    return "\n".join([
        f"execution  {started['execution_arn']}",
        f"status     {started['status']}",
        f"results    {started['results']}",
    ])
