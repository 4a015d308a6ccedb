"""Where a cloud run is now: its Step Functions execution (DescribeExecution), the state it
last entered (GetExecutionHistory, newest event first) and which phases have written their
results (one ListObjectsV2 listing of the run's prefix).

The state machine names each Lambda task after its phase (benchstack_constructs/
benchmark_workflow.py), so the state entered last is the phase running now. The request
and response shapes follow the botocore models of states 2016-11-23 and s3 2006-03-01.
IAM: states:DescribeExecution, states:GetExecutionHistory, s3:ListBucket.
"""

from __future__ import annotations

import json
from typing import Any

import boto3

from runners.results.store import S3Store, latest_attempt_key
from runners.workflow.phases import PHASES

HISTORY_EVENTS = 50  # newest events read; a task state adds about five per attempt


class StatusError(ValueError):
    """The execution ARN is malformed; one line."""


def execution_region(arn: str) -> str:
    """'arn:aws:states:us-east-2:123:execution:benchstack-benchmark:<run-id>' -> 'us-east-2'."""
    parts = arn.split(":")
    if len(parts) < 8 or parts[2] != "states" or parts[5] != "execution":
        raise StatusError(f"{arn!r}: not a Step Functions execution ARN "
                          "(arn:aws:states:<region>:<account>:execution:<machine>:<run-id>)")
    return parts[3]


def _iso(moment) -> str | None:
    return moment.isoformat() if moment is not None else None


def current_state(sfn, arn: str) -> str | None:
    """The state the execution entered last, from its newest history events."""
    events = sfn.get_execution_history(executionArn=arn, reverseOrder=True,
                                       maxResults=HISTORY_EVENTS)["events"]
    for event in events:
        if event["type"].endswith("StateEntered"):
            return event["stateEnteredEventDetails"]["name"]
    return None


def phases_written(keys: list[str], prefix: str) -> list[str]:
    """Phases whose result is in the listing, in phase order (report: its report.md)."""
    found = set(keys)
    written = [p for p in PHASES if p != "report" and latest_attempt_key(prefix + p, found)]
    if f"{prefix}report.md" in found:
        written.append("report")
    return written


def run_status(execution_arn: str, *, session=None) -> dict[str, Any]:
    """The execution's status, the phase running now (None once it stopped), the phases
    with results, and where the results are."""
    region = execution_region(execution_arn)
    session = session or boto3.Session()
    sfn = session.client("stepfunctions", region_name=region)
    described = sfn.describe_execution(executionArn=execution_arn)
    status = described["status"]
    run = json.loads(described.get("input") or "{}").get("run") or {}
    state = current_state(sfn, execution_arn) if status == "RUNNING" else None
    bucket, prefix = run.get("results_bucket"), run.get("results_prefix") or ""
    written: list[str] = []
    if bucket:
        store = S3Store(bucket, client=session.client("s3", region_name=region))
        written = phases_written(store.list(prefix), prefix)
    handoff = (json.loads(described.get("output") or "{}") or {}).get("handoff") or {}
    return {
        "execution_arn": execution_arn, "region": region, "status": status,
        "run_id": run.get("run_id"), "started_at": _iso(described.get("startDate")),
        "stopped_at": _iso(described.get("stopDate")),
        "current_state": state, "current_phase": state if state in PHASES else None,
        "phases_written": written,
        "results": f"s3://{bucket}/{prefix}" if bucket else None,
        "continued_in": handoff.get("execution_arn") if isinstance(handoff, dict) else None,
        "error": described.get("error"), "cause": described.get("cause"),
    }
