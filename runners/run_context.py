"""What every phase gets: the JSON-ready context dict, and helpers that turn it into the
experiment, the provider, the results store and the run's keys.

Context keys (all JSON): run_id, experiment_file (local) or experiment (the workflow's
snapshot), store (folder or s3:// URI), run_prefix, started_at, placement (after
provision), regions (the workflow: the one region to try), ready_budget_s, poll_window_s,
teardown_budget_s, workflow_error.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import threading
import time
from typing import Any

from runners import degeneracy, experiment, providers
from runners.backends.reply import DEGENERATE, Ask, Reply
from runners.results_store import ResultsStore, open_store, run_prefix


def utc_from_epoch(epoch_s: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def utc_now() -> str:
    return utc_from_epoch(time.time())


def new_context(experiment_file: str, store: str) -> dict[str, Any]:
    """The context a run starts with; the run id sorts by time."""
    exp = experiment.load(experiment_file)
    now = dt.datetime.now(dt.timezone.utc)
    run_id = f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
    return {
        "run_id": run_id, "experiment": exp.name, "experiment_file": str(experiment_file),
        "store": str(store), "run_prefix": run_prefix(f"{now:%Y-%m-%d}", exp.name, run_id),
        "started_at": utc_now(), "placement": None,
    }


class Run:
    """One run's view of the context: experiment, provider, store and record writing."""

    def __init__(self, context: dict[str, Any], provider_kwargs: dict[str, Any] | None = None):
        self.context = context
        snapshot = context.get("experiment")
        # The workflow sends the deployed snapshot; the local driver names the file.
        self.experiment = (experiment.from_snapshot(snapshot, f"run {context['run_id']}")
                           if isinstance(snapshot, dict)
                           else experiment.load(context["experiment_file"]))
        self.plan = self.experiment.benchmark
        self.store: ResultsStore = open_store(context["store"])
        self.prefix = context["run_prefix"]
        self._provider_kwargs = provider_kwargs or {}
        self._provider = None

    @property
    def provider(self):
        if self._provider is None:
            self._provider = providers.for_experiment(
                self.experiment, **{"execution_arn": self.context.get("execution_arn"),
                                    **self._provider_kwargs})
        return self._provider

    def key(self, name: str) -> str:
        return self.prefix + name

    def write(self, name: str, obj: Any) -> str:
        return self.store.put_json(self.key(name), obj)

    def read(self, name: str) -> Any:
        return self.store.get_json_or_none(self.key(name))


class Recorder:
    """Sends requests for one phase, checks every reply for degeneracy, keeps the records."""

    def __init__(self, run: Run, phase: str, client):
        self.run, self.phase, self.client = run, phase, client
        self.lines: list[str] = []
        self.degenerate = 0
        self._lock = threading.Lock()  # the load phase sends from many threads

    def send(self, ask: Ask, intended_s: float | None = None, **extra: Any) -> Reply:
        reply = self.client.chat(ask, intended_s=intended_s)
        if reply.ok:
            reason = degeneracy.degenerate_reason(reply.text + reply.reasoning, reply.tool_calls)
            if reason:
                reply.status, reply.error = DEGENERATE, reason
        line = json.dumps(reply.record(self.phase, max_tokens=ask.max_tokens, stream=ask.stream,
                                       **extra))
        with self._lock:
            self.degenerate += reply.status == DEGENERATE
            self.lines.append(line)
        return reply

    def save(self) -> None:
        """requests/<phase>.jsonl; the report joins them into requests.jsonl."""
        if self.lines:
            self.run.store.put_text(self.run.key(f"requests/{self.phase}.jsonl"),
                                    "\n".join(self.lines) + "\n", "application/x-ndjson")
