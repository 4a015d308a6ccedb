"""The benchmark workflow's shared facts: phase timeouts, which runner function runs which
phase, the polling bounds derived from an experiment, and the execution input.

Pure functions of the phase list and the experiment snapshot (the dict that
`Experiment.to_dict()` gives and the experiment stack stores in SSM), so the CDK
construct, the starter (CLI and deploy trigger) and the tests read one source of truth.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from runners.workflow.phases import PHASES

SSM_ROOT = "/benchstack"
STATE_MACHINE_PARAMETER = f"{SSM_ROOT}/benchmark/state-machine-arn"
STATE_MACHINE_NAME = "benchstack-benchmark"  # one per region, in the benchmark stack
# Fixed names per region, so an execution input can name the function for each phase
# and a state machine in one region can address the same function in another.
CONTROL_FUNCTION = "benchstack-runner-control"  # outside any VPC: AWS APIs, SageMaker, Bedrock
DATA_FUNCTION = "benchstack-runner-data"  # in the foundation VPC: the EC2 engine's private IP

# Control-plane steps bracket the run; the phases between them measure.
CONTROL_PHASES = ("provision", "await_ready", "teardown", "report")
# What an in-VPC function without NAT cannot do: AWS APIs other than S3 (EC2, Pricing, SNS,
# Step Functions).
NEEDS_AWS_APIS = ("provision", "cost", "teardown", "report", "handoff", "check_instance")

LAMBDA_MAX_TIMEOUT_S = 900
HANDOFF = "handoff"  # not a phase: the step that continues a run in another region
# Not phases either: the scale-out of the load phase (runners/measure/load/scale_out.py),
# a plan step and a Map of shard steps that run before it; and, each poll round of an EC2
# run, the control function (outside the VPC) asking the EC2 API for the instance's state,
# which the in-VPC poller cannot: a terminated or stopped instance ends the wait within
# one round.
SCALE_OUT_PLAN = "load_scale_out"
LOAD_SHARD = "load_shard"
INSTANCE_CHECK = "check_instance"
STEPS = (HANDOFF, SCALE_OUT_PLAN, LOAD_SHARD, INSTANCE_CHECK)
# Seconds each step may run in one Lambda invocation; all under Lambda's 15 minutes.
# await_ready is a single look (the state machine loops), so it is short.
PHASE_TIMEOUT_S: dict[str, int] = {
    HANDOFF: 60,
    SCALE_OUT_PLAN: 60,
    LOAD_SHARD: 840,
    INSTANCE_CHECK: 60,
    "provision": 300,
    "await_ready": 60,
    "warmup": 600,
    "decode": 600,
    "stream": 600,
    "context": 840,
    "load": 840,
    "quality": 840,
    "toolcall": 300,
    "cost": 120,
    "teardown": 300,
    "report": 300,
}

POLL_SECONDS = {"sagemaker": 30, "ec2": 15, "bedrock": 5}
# EC2: boot, pull the engine image, download and load the weights (observed ~10-20 min).
EC2_READY_BUDGET_S = 45 * 60
EC2_ALERT_AFTER_S = 30 * 60
BEDROCK_READY_BUDGET_S = 60
# Each poll adds ~12 history events; Step Functions caps a run's history at 25,000.
MAX_POLLS = 1500
TEARDOWN_ATTEMPTS = 10
TEARDOWN_RETRY_SECONDS = 60
MAX_RESULT_BYTES = 8 * 1024  # a phase returns S3 keys; the whole state stays under 256 KiB


def foundation_parameter(key: str) -> str:
    """SSM parameter a later stack or a runner reads, e.g. /benchstack/foundation/vpc-id."""
    return f"{SSM_ROOT}/foundation/{key}"


def experiment_parameter(name: str) -> str:
    """Where an experiment stack stores its validated definition."""
    return f"{SSM_ROOT}/experiments/{name}"


def phase_timeout_s(phase: str) -> int:
    try:
        seconds = PHASE_TIMEOUT_S[phase]
    except KeyError:
        raise KeyError(f"phase {phase!r} has no timeout in runners/workflow/execution.py "
                       "PHASE_TIMEOUT_S; add one under 900 s") from None
    if not 0 < seconds < LAMBDA_MAX_TIMEOUT_S:
        raise ValueError(f"phase {phase!r}: timeout {seconds} s must be under "
                         f"{LAMBDA_MAX_TIMEOUT_S} s (Lambda's limit); split the phase")
    return seconds


def measurement_phases(phases: tuple[str, ...] = PHASES) -> tuple[str, ...]:
    """The phases between readiness and teardown, in order."""
    return tuple(p for p in phases if p not in CONTROL_PHASES)


def function_for(phase: str, backend: str) -> str:
    """The runner function for `phase`: EC2 engines listen on a private address that only
    the in-VPC function reaches; everything else runs outside the VPC."""
    if backend == "ec2" and phase not in NEEDS_AWS_APIS:
        return DATA_FUNCTION
    return CONTROL_FUNCTION


def ready_budget_s(experiment: dict[str, Any]) -> int:
    """How long the workflow waits for a placement to become ready."""
    backend = experiment["backend"]
    if backend == "sagemaker":
        # SageMaker enforces these itself; our bound sits just past their sum.
        t = experiment["sagemaker"]["timeouts"]
        return (t["model_data_download_s"] + t["container_startup_health_check_s"]
                + t["variant_instance_provision_s"] + 600)
    if backend == "ec2":
        return EC2_READY_BUDGET_S
    return BEDROCK_READY_BUDGET_S


def limits(experiment: dict[str, Any]) -> dict[str, Any]:
    """Loop bounds for one execution (the state machine is shared by every experiment in
    a region, so the bounds travel in the input)."""
    backend = experiment["backend"]
    poll_s = POLL_SECONDS[backend]
    budget_s = min(ready_budget_s(experiment), int(experiment["ttl_hours"] * 3600))
    alert_s = (experiment["sagemaker"]["creating_alert_minutes"] * 60
               if backend == "sagemaker" else EC2_ALERT_AFTER_S)
    max_polls = min(MAX_POLLS, math.ceil(budget_s / poll_s))
    return {
        "poll_seconds": poll_s,
        "max_polls": max_polls,
        # An alert at most once, when waiting passes the threshold; never if it cannot.
        "alert_after_polls": min(math.ceil(alert_s / poll_s), max_polls + 1),
        "teardown_attempts": TEARDOWN_ATTEMPTS,
        "teardown_retry_seconds": TEARDOWN_RETRY_SECONDS,
        # The client must sit in the placement's region (EC2: the VPC's private address).
        "same_region_client": backend == "ec2",
        # The await loop looks at the instance from outside the VPC too (INSTANCE_CHECK).
        "check_instance": backend == "ec2",
    }


def new_run_id(now: datetime, suffix: str) -> str:
    """'20261203T001500Z-ab12cd': sorts by start time; `suffix` makes it unique."""
    return f"{now.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-{suffix}"


def results_prefix(experiment_name: str, run_id: str, now: datetime) -> str:
    """runs/<YYYY-MM-DD>-<experiment>/<run-id>/ (docs/results-format.md)."""
    return f"runs/{now.astimezone(timezone.utc):%Y-%m-%d}-{experiment_name}/{run_id}/"


def region_order(experiment: dict[str, Any], first: str | None) -> list[str]:
    """The experiment's regions, with `first` moved to the front."""
    regions = list(experiment["regions"])
    if first is None:
        return regions
    if first not in regions:
        raise ValueError(f"{experiment['name']}: region {first!r} is not in the experiment's "
                         f"regions ({', '.join(regions)})")
    return [first] + [r for r in regions if r != first]


def execution_input(experiment: dict[str, Any], *, run_id: str, home_region: str,
                    regions: list[str], results_bucket: str, results_prefix: str,
                    started_at: str | None = None, region_index: int = 0) -> dict[str, Any]:
    """Everything one execution needs, and nothing big: the state machine adds only
    small results (S3 keys) to it."""
    return {
        "experiment": experiment,
        "run": {
            "run_id": run_id,
            "home_region": home_region,
            "results_bucket": results_bucket,
            "results_prefix": results_prefix,
            "started_at": started_at,  # the run's start, kept across a hand-off
        },
        "regions": regions,
        "region_index": region_index,
        "functions": {p: function_for(p, experiment["backend"]) for p in (*PHASES, *STEPS)},
        "limits": limits(experiment),
    }
