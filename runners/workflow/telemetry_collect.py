"""After teardown: what the backend recorded about the run (the engine log, the device
samples, the endpoint's CloudWatch metrics) copied into the run folder under telemetry/,
with telemetry.json saying what came, from where, and why anything did not.

Runs once per run, after the delete went through (a later call finds telemetry.json and
reads it back); a source that cannot be read is written down, never raised.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from runners.run_context import Run, utc_now


def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def after_teardown(run: Run, placement: dict[str, Any] | None,
                   teardown_state: str | None = "deleted") -> dict[str, Any]:
    """Collect once the delete went through; a teardown still to be retried collects
    nothing yet (the workflow calls again), so the log covers the whole endpoint life."""
    key = run.key("telemetry.json")
    if run.store.exists(key):
        return run.store.get_json(key)
    if teardown_state != "deleted":
        return {"files": [], "missing": {"telemetry": f"teardown {teardown_state}: "
                                         "collected once the delete goes through"}}
    placement = placement or {}
    end_s = time.time()
    start_s = (_epoch(placement.get("provision_started_at")) or _epoch(run.context.get(
        "started_at")) or end_s)
    try:
        got = run.provider.collect_telemetry(placement, start_s, end_s)
    except Exception as exc:  # noqa: BLE001 - recorded in telemetry.json
        got = {"files": {}, "location": None,
               "missing": {"telemetry": f"{type(exc).__name__}: {exc}"}}
    for name, data in got.get("files", {}).items():
        file_key = run.key(f"telemetry/{name}")
        if not run.store.exists(file_key):
            run.store.put_bytes(file_key, data)
    index = {"location": got.get("location"), "files": sorted(got.get("files", {})),
             "missing": got.get("missing", {}), "window_s": [start_s, end_s],
             "collected_at": utc_now()}
    run.write("telemetry.json", index)
    return index
