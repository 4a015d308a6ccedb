"""What every phase gets: the JSON-ready context dict, and helpers that turn it into the
experiment, the provider, the results store and the run's keys.

Context keys (all JSON): run_id, experiment_file (local) or experiment (the workflow's
snapshot), store (folder or s3:// URI), run_prefix, started_at, placement (after
provision), regions (the workflow: the one region to try), ready_budget_s, poll_window_s,
teardown_budget_s, workflow_error.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from typing import Any

from runners import experiment, providers
from runners.clock import utc_now
from runners.results.store import ResultsStore, open_store, run_prefix


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
