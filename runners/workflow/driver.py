"""The local driver: runs PHASES in order in this process, the way the workflow runs
them in Lambda. Teardown and report run on every path, Ctrl-C and SIGTERM included."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from runners import progress
from runners.run_context import Run, new_context
from runners.workflow import phases


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived; what was started has been torn down."""


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run_experiment(experiment_file: str, store: str, *,
                   provider_kwargs: dict[str, Any] | None = None,
                   context_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every phase; returns {"context", "results", "interrupted"}."""
    context = {**new_context(experiment_file, store), **(context_overrides or {})}
    run = Run(context, provider_kwargs)
    results: list[dict[str, Any]] = []
    interrupted = False
    # Python sets signal handlers only on the main thread; elsewhere (the MCP server runs
    # a benchmark on a worker thread) the process's own handlers stay as they are.
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if on_main else None
    try:
        gate_failed = False
        for name in phases.PHASES:
            if name in phases.ALWAYS_RUN:
                break
            if gate_failed:
                continue
            results.append(_run_until_settled(name, context, run))
            gate_failed = name in phases.GATES and results[-1]["state"] != "done"
    except KeyboardInterrupt:
        interrupted = True
        progress.emit("interrupted", "tearing down what was started")
    finally:
        # Ctrl-C during teardown must not leave the engine running: ignore it until done.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN) if on_main else None
        try:
            for name in phases.ALWAYS_RUN:
                progress.emit(name, "")
                results.append(phases.run_phase(name, context, run=run))
        finally:
            if on_main:
                signal.signal(signal.SIGINT, old_int)
                signal.signal(signal.SIGTERM, previous)
    return {"context": context, "results": results, "interrupted": interrupted}


def _run_until_settled(name: str, context: dict[str, Any], run: Run) -> dict[str, Any]:
    """A phase that answers "waiting" (await_ready) is called again, as the workflow would."""
    while True:
        progress.emit(name, "")
        result = phases.run_phase(name, context, run=run)
        context.update(result.get("updates") or {})
        if result["state"] != "waiting":
            return result
        time.sleep(phases.POLL_INTERVAL_S)
