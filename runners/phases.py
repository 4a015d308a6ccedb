"""The benchmark phases, in order, and the dispatcher both drivers call.

Placeholder for the workflow branch: issue 5 provides the real module (same names). The
Step Functions definition and the local driver are both built from `PHASES`.
"""

from __future__ import annotations

from typing import Callable

PHASES: tuple[str, ...] = (
    "provision", "await_ready", "warmup", "decode", "stream", "load", "quality", "toolcall",
    "cost", "teardown", "report",
)

# phase name -> function(context) -> small JSON-ready dict (S3 keys, not data)
PHASE_FUNCTIONS: dict[str, Callable[[dict], dict]] = {}


def run_phase(name: str, context: dict) -> dict:
    """Run phase `name` with the workflow's context; returns what the phase wrote."""
    if name not in PHASES:
        raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
    function = PHASE_FUNCTIONS.get(name)
    if function is None:
        raise NotImplementedError(f"phase {name!r} has no implementation in this build")
    return function(context)
