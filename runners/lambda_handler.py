"""The one Lambda entry point of the benchmark workflow: `handler(event, context)`.

Each Step Functions task sends {"phase": name, ...the workflow's state...}; the phase runs
through `runners.phases.run_phase`, exactly as the local driver runs it. This module only
adapts results to what the state machine branches on, and keeps them small.
"""

from __future__ import annotations

import json
from typing import Any

from runners import phases, workflow
from runners.providers.base import ProvisionError

class PhaseContractError(RuntimeError):
    """A phase returned something the state machine cannot branch on."""


def _placement_status(phase: str, result: dict[str, Any]) -> dict[str, Any]:
    """provision and await_ready: {"status", "placement", ...} for the workflow's Choices."""
    if not isinstance(result.get("placement"), dict):
        raise PhaseContractError(f"phase {phase!r} must return a 'placement' object; got "
                                 f"keys {sorted(result)}")
    if phase == "provision":
        return {**result, "status": "placed"}
    state = result.get("state")
    if state not in ("ready", "waiting", "failed"):
        raise PhaseContractError(f"phase 'await_ready' returned state {state!r}; "
                                 "expected ready, waiting or failed")
    capacity = state == "failed" and result.get("kind") == ProvisionError.CAPACITY
    return {**result, "status": "capacity" if capacity else state}


def _checked_size(phase: str, result: Any) -> Any:
    size = len(json.dumps(result, separators=(",", ":")).encode())
    if size > workflow.MAX_RESULT_BYTES:
        raise PhaseContractError(
            f"phase {phase!r} returned {size} bytes; at most {workflow.MAX_RESULT_BYTES} "
            "fit the workflow's state: write the data to the results store, return its key")
    return result


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    phase = event["phase"]
    if phase == workflow.HANDOFF:
        from runners import start  # boto3 is imported only where it is used

        return start.hand_off(event)
    try:
        result = phases.run_phase(phase, event)
    except ProvisionError as exc:
        # No capacity in this region is a branch (the next region), not a failure.
        if exc.kind != ProvisionError.CAPACITY or phase not in ("provision", "await_ready"):
            raise
        result = {"status": "capacity", "placement": exc.detail.get("placement", {}),
                  "message": str(exc)}
        return _checked_size(phase, result)
    if not isinstance(result, dict):
        raise PhaseContractError(f"phase {phase!r} returned {type(result).__name__}, "
                                 "not a JSON object")
    if phase in ("provision", "await_ready"):
        result = _placement_status(phase, result)
    elif phase == "teardown" and result.get("state") not in ("deleted", "retry-later"):
        raise PhaseContractError(f"phase 'teardown' returned state {result.get('state')!r}; "
                                 "expected deleted or retry-later")
    return _checked_size(phase, result)

