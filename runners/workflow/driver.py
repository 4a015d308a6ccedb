"""The local driver: runs PHASES in order in this process, the way the workflow runs
them in Lambda. Teardown and report run on every path.

Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a dropped SSH session) all do the same:
the requests in flight are cancelled at once (their connections are shut, see
backends/cancel.py), the phase in progress ends, and teardown and report run with these
signals ignored until they are done. Before anything is placed, the store must take a
write and give it back; a store that fails later hands the run to a local folder
(results/store.py FallbackStore), which then holds the whole run and its report.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any

from runners import progress
from runners.backends import cancel
from runners.results import store as results_store
from runners.run_context import Run, new_context
from runners.workflow import phases

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MEASURING = ("warmup", "decode", "stream", "load", "quality", "toolcall")
# The run's exit statuses (python -m runners run): the first that applies wins.
EXIT_TEARDOWN_FAILED = 4  # the resource may still bill: look now
EXIT_INTERRUPTED = 130
EXIT_PHASE_FAILED = 1  # provision, await_ready or a phase that broke
EXIT_NOTHING_MEASURED = 3  # a measuring phase sent requests and none succeeded


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP arrived; what was started has been torn down."""


def _on_signal(signum, _frame):
    name = signal.Signals(signum).name
    cancel.cancel(name)  # first: wakes every thread blocked on a request
    raise KeyboardInterrupt(name)


def _say(phase: str, message: str = "") -> None:
    """Progress that cannot stop a teardown: after SIGHUP the terminal is gone and
    writing to it fails."""
    try:
        progress.emit(phase, message)
    except OSError:
        pass


def run_experiment(experiment_file: str, store: str, *,
                   provider_kwargs: dict[str, Any] | None = None,
                   context_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every phase; returns {"context", "results", "interrupted", "signal",
    "store_fallback"}. Raises StoreUnusable, before anything is placed, when the store
    cannot write and read back a probe key."""
    cancel.reset()
    context = {**new_context(experiment_file, store), **(context_overrides or {})}
    run = Run(context, provider_kwargs)
    results_store.probe(run.store, run.key("store-probe.json"))
    notes: list[str] = []
    run.store = results_store.FallbackStore(run.store, results_store.fallback_root(),
                                            lambda line: (notes.append(line),
                                                          _say("store", line)))
    results: list[dict[str, Any]] = []
    caught: str | None = None
    # Python sets signal handlers only on the main thread; elsewhere (the MCP server runs
    # a benchmark on a worker thread) the process's own handlers stay as they are.
    on_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _on_signal) for sig in SIGNALS} if on_main else {}
    try:
        gate_failed = False
        for name in phases.PHASES:
            if name in phases.ALWAYS_RUN:
                break
            if gate_failed:
                continue
            results.append(_run_until_settled(name, context, run))
            gate_failed = name in phases.GATES and results[-1]["state"] != "done"
    except KeyboardInterrupt as exc:
        caught = str(exc) or "SIGINT"
        cancel.cancel(caught)
        _say("interrupted", f"{caught}: tearing down what was started")
    finally:
        # A second signal during teardown must not leave the engine running.
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        try:
            for name in phases.ALWAYS_RUN:
                _say(name)
                results.append(phases.run_phase(name, context, run=run))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if isinstance(run.store, results_store.FallbackStore) and run.store.fell_back:
        context["store"] = str(run.store.fallback_root)
    return {"context": context, "results": results, "interrupted": caught is not None,
            "signal": caught, "store_fallback": notes[0] if notes else None,
            "no_success": _measured_nothing(run, results)}


def _run_until_settled(name: str, context: dict[str, Any], run: Run) -> dict[str, Any]:
    """A phase that answers "waiting" (await_ready) is called again, as the workflow would."""
    while True:
        _say(name)
        result = phases.run_phase(name, context, run=run)
        context.update(result.get("updates") or {})
        if result["state"] != "waiting":
            return result
        time.sleep(phases.POLL_INTERVAL_S)


def _measured_nothing(run: Run, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Measuring phases that sent requests and got not one successful reply, read from
    their records: [{"phase", "sent", "first_error"}]."""
    empty = []
    for result in results:
        if result["phase"] not in MEASURING or result["state"] == "skipped":
            continue
        try:
            text = run.store.get_bytes(run.key(f"requests/{result['phase']}.jsonl")).decode()
        except FileNotFoundError:
            continue
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        if records and not any(r.get("status") == "ok" for r in records):
            empty.append({"phase": result["phase"], "sent": len(records),
                          "first_error": next((r.get("error") for r in records
                                               if r.get("error")), None)})
    return empty


def verdict(outcome: dict[str, Any]) -> tuple[int, str | None]:
    """The exit status of a run and its one-line reason (None when all went well)."""
    failed = {r["phase"]: r for r in outcome["results"] if r["state"] == "failed"}
    if "teardown" in failed:
        return EXIT_TEARDOWN_FAILED, (f"teardown failed: {failed['teardown'].get('error')}; "
                                      "the resource may still be running and billing")
    if outcome["interrupted"]:
        return EXIT_INTERRUPTED, f"interrupted by {outcome['signal']}: the run was torn down"
    if failed:
        name = next(iter(failed))
        return EXIT_PHASE_FAILED, f"phase {name} failed: {failed[name].get('error')}"
    if outcome.get("no_success"):
        first = outcome["no_success"][0]
        names = ", ".join(f"{e['phase']} ({e['sent']} sent)" for e in outcome["no_success"])
        return EXIT_NOTHING_MEASURED, (f"no successful request in {names}; first error: "
                                       f"{first['first_error']}")
    return 0, None
