"""The phase list, defined once. The local driver runs it in order and the Step Functions
workflow is built from it, so a laptop run exercises exactly the code Lambda runs.

Every phase is `run_phase(name, context) -> small dict` with JSON-ready input and output:
{"phase", "state": "done"|"waiting"|"failed"|"skipped", "key": where its JSON went,
 "updates": context fields to merge (e.g. the placement)}. The phase's full result is in
the results store before it returns.
"""

from __future__ import annotations

import getpass
import os
import platform
import socket
import subprocess
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from runners import code_digest, progress
from runners.cost import phase as cost_phase
from runners.measure import context as measure_context
from runners.measure import phases as measure
from runners.measure.load import scale_out as measure_scale_out
from runners.measure.recorder import Recorder
from runners.providers.base import ProvisionError
from runners.results import report
from runners.workflow import telemetry_collect
from runners.run_context import Run, utc_from_epoch, utc_now

PHASES: tuple[str, ...] = (
    "provision", "await_ready",
    "warmup", "decode", "stream", "context", "load", "quality", "toolcall",
    "cost",
    "teardown", "report",
)
# Run whatever happened before them: the meter must stop and the results must be readable.
ALWAYS_RUN: tuple[str, ...] = ("teardown", "report")
# Without these there is nothing to measure: on failure, skip to ALWAYS_RUN.
GATES: tuple[str, ...] = ("provision", "await_ready")
# The workflow may run these again (the next region, a teardown retried): every attempt
# is kept (<phase>.json, <phase>.2.json ...) and the report reads the last.
REPEATABLE: tuple[str, ...] = ("provision", "await_ready", "teardown")

DEFAULT_READY_BUDGET_S = 900.0
DEFAULT_TEARDOWN_BUDGET_S = 300.0
POLL_INTERVAL_S = 1.0


def _code_version() -> str:
    if os.environ.get("BENCHSTACK_CODE_VERSION"):
        return os.environ["BENCHSTACK_CODE_VERSION"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _client_location() -> dict[str, Any]:
    lambda_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return {"kind": "lambda" if lambda_name else "local", "function": lambda_name,
            "region": os.environ.get("AWS_REGION"), "host": socket.gethostname(),
            "platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "user": None if lambda_name else _user()}


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container user with no passwd entry
        return None


# ---------------------------------------------------------------- lifecycle phases


def provision(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """Try each region in order; capacity refusals move on, anything else stops."""
    exp = run.experiment
    started, refused, placement, failure = utc_now(), [], None, None
    # The workflow tries one region per call (context "regions"); the local driver, all.
    for region in run.context.get("regions") or exp.regions or ("local",):
        progress.emit("provision", f"placing in {region}")
        try:
            placement = run.provider.provision(run.context["run_id"], region)
            break
        except ProvisionError as exc:
            refused.append({"region": region, **exc.to_dict()})
            if exc.kind != ProvisionError.CAPACITY:
                failure = exc.to_dict()
                break
        except Exception as exc:  # still write the manifest, so the run has a report
            failure = {"kind": ProvisionError.FATAL, "message": f"{type(exc).__name__}: {exc}",
                       "detail": {}}
            break
    if placement is None and failure is None:
        failure = {"kind": ProvisionError.CAPACITY, "message": "no capacity in any region",
                   "detail": {}}
    result = {"started_at": started, "finished_at": utc_now(), "placement": placement,
              "refused": refused, "error": failure}
    manifest = {
        "schema": "benchstack.manifest/1", "run_id": run.context["run_id"],
        "experiment": exp.to_dict(), "code_version": _code_version(),
        "runners_digest": code_digest.runners_digest(),
        "started_at": run.context.get("started_at"), "client": _client_location(),
        "placement": placement, "refused_placements": refused,
    }
    run.store.put_json_attempt(run.key("manifest"), manifest)
    # A half-made placement from the failure detail still has to be torn down.
    keep = placement or (failure or {}).get("detail", {}).get("placement")
    return result, {"placement": keep}


def await_ready(run: Run) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Poll until ready, failed, or `ready_budget_s` after the first poll. One call polls
    for at most `poll_window_s` (a Lambda's share); the result is None (nothing written)
    while still waiting, so the workflow calls again; the final result is written once."""
    placement = run.context.get("placement")
    budget_s = float(run.context.get("ready_budget_s", DEFAULT_READY_BUDGET_S))
    first_epoch = float(run.context.get("ready_polls_started_epoch") or time.time())
    deadline = first_epoch + budget_s
    window_end = time.time() + float(run.context.get("poll_window_s", budget_s))
    polls = 0
    while True:
        look = run.provider.poll_ready(placement)
        polls += 1
        placement = look.get("placement", placement)
        if look["state"] in ("ready", "failed"):
            break
        if time.time() + POLL_INTERVAL_S > deadline:
            look = {"state": "failed", "message": f"not ready within {budget_s:g} s: "
                    f"{look.get('message', 'waiting')}"}
            break
        if time.time() + POLL_INTERVAL_S > window_end:
            return None, {"placement": placement, "ready_polls_started_epoch": first_epoch}
        progress.emit("await_ready", look.get("message", "waiting"))
        time.sleep(POLL_INTERVAL_S)
    result = {"state": look["state"], "kind": look.get("kind"),
              "polls_started_at": utc_from_epoch(first_epoch),
              "ready_at": utc_now() if look["state"] == "ready" else None, "polls": polls,
              "message": look.get("message"), "placement": placement}
    return result, {"placement": placement}


def teardown(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """Delete what bills; "retry-later" is retried within the budget, then reported."""
    placement = run.context.get("placement") or {}
    budget_s = float(run.context.get("teardown_budget_s", DEFAULT_TEARDOWN_BUDGET_S))
    deadline = time.monotonic() + budget_s
    attempts = []
    while True:
        outcome = run.provider.teardown(placement)
        attempts.append(outcome)
        if outcome.get("state") == "deleted" or time.monotonic() + POLL_INTERVAL_S > deadline:
            break
        time.sleep(POLL_INTERVAL_S)
    telemetry = telemetry_collect.after_teardown(run, placement, outcome.get("state"))
    return {"state": outcome.get("state"), "attempts": attempts, "finished_at": utc_now(),
            "telemetry": {"files": telemetry["files"], "missing": telemetry["missing"]},
            # what stopped a workflow run early, recorded with the run
            "workflow_error": run.context.get("workflow_error") or None}, {}


def cost(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """Prices -> $/hour, $/1M output tokens, break-even, from the measurements so far."""
    so_far = report.build_summary(report.read_files(run.store, run.prefix))
    return cost_phase.run({"experiment": run.experiment, "results": so_far}), {}


# ---------------------------------------------------------------- dispatch


def _measuring(fn: Callable[[Run, Recorder], dict[str, Any]], name: str):
    def phase(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
        placement = run.context.get("placement")
        if not placement:
            return {"skipped": True, "reason": "nothing was placed"}, {}
        client = run.provider.client(placement)
        rec = Recorder(run, name, client)
        started = utc_now()
        try:
            result = fn(run, rec)
        finally:
            rec.save()
            client.close()
        return {"started_at": started, "finished_at": utc_now(),
                "degenerate_responses": rec.degenerate, **result}, {}
    return phase


_RUNNERS: dict[str, Callable[[Run], Any]] = {
    "provision": provision,
    "await_ready": await_ready,
    **{name: _measuring(getattr(measure, name), name)
       for name in ("warmup", "decode", "stream", "load", "quality", "toolcall")},
    "context": _measuring(measure_context.run, "context"),
    "cost": cost,
    "teardown": teardown,
    "report": lambda run: (report.write_report(run.store, run.prefix), {}),
}
assert set(_RUNNERS) == set(PHASES), "every phase in PHASES needs a runner, and only those"


def scale_out_plan(context: dict[str, Any]) -> dict[str, Any]:
    """The workflow's "load_scale_out" step: which load levels run as a Map of shards."""
    return measure_scale_out.plan(Run(context).plan, time.time())


def load_shard(context: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """The workflow's "load_shard" step: one shard of a scaled-out load level, written
    where the load phase merges it (runners/measure/load/scale_out.py)."""
    run = Run(context)
    client = run.provider.client(run.context.get("placement"))
    rec = Recorder(run, "load", client)
    try:
        result = measure.load_shard(run, rec, item)
    finally:
        client.close()
    level, shard = item["level"], item["shard"]
    if rec.lines:
        run.store.put_text(run.key(measure_scale_out.shard_records_key(level, shard)),
                           "\n".join(rec.lines) + "\n", "application/x-ndjson")
    key = run.key(measure_scale_out.shard_key(level, shard))
    run.store.put_json(key, result)
    return {"phase": "load_shard", "state": "done", "key": key, "level": level,
            "shard": shard, "requests": len(result["replies"])}


def _state(name: str, result: dict[str, Any]) -> str:
    if result.get("skipped"):
        return "skipped"
    failed = (name == "provision" and result.get("placement") is None) or \
        (name == "await_ready" and result.get("state") != "ready") or \
        (name == "teardown" and result.get("state") != "deleted")
    return "failed" if failed else "done"


def run_phase(name: str, context: dict[str, Any], *,
              provider_kwargs: dict[str, Any] | None = None, run: Run | None = None
              ) -> dict[str, Any]:
    """Run one phase; its JSON is in the store before this returns."""
    if name not in _RUNNERS:
        raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
    run = run or Run(context, provider_kwargs)
    key = run.key(f"{name}.json")
    if name not in (*REPEATABLE, "report") and run.store.exists(key):
        return {"phase": name, "state": "failed", "key": key, "updates": {},
                "error": f"{run.store.uri(key)} is already written; results are never "
                         "overwritten (start a new run)"}
    try:
        out = _RUNNERS[name](run)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a phase that breaks is recorded, and the run goes on to teardown
        result = {"error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc(limit=8), "finished_at": utc_now()}
        if name != "report":
            try:
                key = _record(run, name, result)
            except Exception as again:  # the store failed too: say both, raise neither
                result["error"] += f" (and its record was not written: {type(again).__name__}"\
                                   f": {again})"
                key = None
        return {"phase": name, "state": "failed", "key": key, "error": result["error"],
                "updates": {}}
    result, updates = out
    if result is None:
        return {"phase": name, "state": "waiting", "key": None, "updates": updates}
    if name != "report":  # the report phase writes its own files
        key = _record(run, name, result)
    state = _state(name, result)
    answer = {"phase": name, "state": state, "key": key, "updates": updates}
    error = result.get("error") or {}
    if name in REPEATABLE:  # what the workflow branches on (ready, deleted, capacity ...)
        answer["outcome"] = result.get("state") or ("placed" if result.get("placement")
                                                    else None)
        answer["kind"] = result.get("kind") or (error.get("kind") if isinstance(error, dict)
                                                else None)
    if state == "failed":
        answer["error"] = error.get("message") if isinstance(error, dict) else str(error)
        answer["error"] = answer["error"] or result.get("message") or result.get("state")
    return answer


def _record(run: Run, name: str, result: dict[str, Any]) -> str:
    if name in REPEATABLE:
        return run.store.put_json_attempt(run.key(name), result)
    run.write(f"{name}.json", result)
    return run.key(f"{name}.json")
