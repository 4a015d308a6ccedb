"""The one Lambda entry point of the benchmark workflow: `handler(event, context)`.

Each Step Functions task sends {"phase", "experiment", "run", "region", "placement",
"error", ...}; the phase runs through `runners.workflow.phases.run_phase`, exactly as the local
driver runs it, with a context built from the event (`phase_context`). This module only
adapts the answer to what the state machine branches on, and keeps it small.
"""

from __future__ import annotations

import json
from typing import Any

from runners import sdk

# Refuse to start on an SDK that would drop fields quietly, before anything imports it.
sdk.require_botocore()

from runners.providers.base import ProvisionError  # noqa: E402
from runners.workflow import execution as workflow  # noqa: E402
from runners.workflow import phases  # noqa: E402


ERROR_CHARS = 1000  # of an error message kept in the workflow's state


class PhaseContractError(RuntimeError):
    """A phase returned something the state machine cannot branch on."""


class PhaseFailed(RuntimeError):
    """A step without which the run cannot go on failed; the workflow tears down and
    fails with this message (the phase's record is in the results store)."""


def phase_context(event: dict[str, Any]) -> dict[str, Any]:
    """The run context of `runners.run_context` for one workflow task. The state machine
    owns the loops, so each call does one thing: one region, one look, one teardown."""
    run = event["run"]
    placement = event.get("placement") or {}
    if event["phase"] == "teardown" and not placement:
        # provision died before answering: names and tags carry the run id and region
        placement = {"region": event.get("region"), "run_id": run["run_id"]}
    return {
        "run_id": run["run_id"],
        "experiment": event["experiment"],
        "store": f"s3://{run['results_bucket']}",
        "run_prefix": run["results_prefix"],
        "started_at": run.get("started_at"),
        "placement": placement or None,
        "regions": [event["region"]] if event.get("region") else [],
        "ready_budget_s": workflow.ready_budget_s(event["experiment"]),
        "poll_window_s": 0,
        "teardown_budget_s": 0,
        "workflow_error": event.get("error") or None,
        "execution_arn": event.get("execution_arn"),
    }


def _placement_status(phase: str, answer: dict[str, Any]) -> dict[str, Any]:
    """provision and await_ready: {"status", "placement"} for the workflow's Choices."""
    placement = (answer.get("updates") or {}).get("placement") or {}
    outcome, kind = answer.get("outcome"), answer.get("kind")
    if answer["state"] == "waiting":
        status = "waiting"
    elif kind == ProvisionError.CAPACITY:
        status = "capacity"  # a branch (the next region), not a failure
    elif answer["state"] == "failed":
        if phase == "provision" or outcome is None:  # refused, or the step raised
            raise PhaseFailed(answer.get("error") or f"{phase} failed ({answer['key']})")
        status = "failed"
    elif phase == "provision":
        status = "placed"
    elif outcome == "ready":
        status = "ready"
    else:
        raise PhaseContractError(f"phase {phase!r} answered {outcome!r}; expected ready, "
                                 "waiting or failed")
    return {"status": status, "placement": placement, "key": answer.get("key"),
            "message": answer.get("error")}


def _checked_size(phase: str, result: Any) -> Any:
    size = len(json.dumps(result, separators=(",", ":")).encode())
    if size > workflow.MAX_RESULT_BYTES:
        raise PhaseContractError(
            f"phase {phase!r} returned {size} bytes; at most {workflow.MAX_RESULT_BYTES} "
            "fit the workflow's state: write the data to the results store, return its key")
    return result


def check_instance(event: dict[str, Any]) -> dict[str, Any]:
    """One look at the placed instance from the control function: {"status": "failed" |
    "alive", "placement", "message"}. Nothing is written; a failure's reason travels in
    the placement to the teardown and the run's cause."""
    from runners.run_context import Run

    context = phase_context(event)
    look = Run(context).provider.check_instance(context["placement"] or {})
    return {"status": look["state"], "placement": look["placement"],
            "message": (look.get("message") or "")[:ERROR_CHARS]}


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    phase = event["phase"]
    if phase == workflow.INSTANCE_CHECK:
        return _checked_size(phase, check_instance(event))
    if phase == workflow.HANDOFF:
        from runners.workflow import start  # boto3 is imported only where it is used

        return start.hand_off(event)
    if phase == workflow.SCALE_OUT_PLAN:
        return _checked_size(phase, phases.scale_out_plan(phase_context(event)))
    if phase == workflow.LOAD_SHARD:
        return _checked_size(phase, phases.load_shard(phase_context(event), event["shard"]))
    answer = phases.run_phase(phase, phase_context(event))
    if answer.get("error"):  # the whole error is in the phase's record
        answer["error"] = str(answer["error"])[:ERROR_CHARS]
    if phase in ("provision", "await_ready"):
        return _checked_size(phase, _placement_status(phase, answer))
    if phase == "teardown":
        outcome = answer.get("outcome")
        if outcome not in ("deleted", "retry-later"):
            # the teardown raised: the workflow retries it, then alerts
            raise PhaseFailed(answer.get("error") or f"teardown answered {outcome!r}")
        return _checked_size(phase, {"state": outcome, "key": answer["key"]})
    # Measurement phases, cost and report: a phase that broke is recorded and the run goes
    # on, as in the local driver; the state keeps where its record is.
    answer.pop("updates", None)
    return _checked_size(phase, answer)
