"""The provider contract shared by the local driver and the Step Functions tasks.

Every method takes and returns JSON-ready dicts so that a Step Functions state can carry
the placement between Lambda invocations. Provisioning is split into `provision` (start
placing, once per region tried) and `poll_ready` (one look, called in a bounded loop),
because a Lambda cannot wait the minutes an endpoint takes.
"""

from __future__ import annotations

import abc
from typing import Any


class ProvisionError(RuntimeError):
    """Placing the experiment failed. `kind` says what the workflow does next."""

    CAPACITY = "capacity"  # no capacity anywhere in this region: try the next region
    QUOTA = "quota"  # a service quota refused it: stop, with the quota named
    FATAL = "fatal"  # anything else (bad image, model load error): stop

    def __init__(self, kind: str, message: str, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.kind, self.detail = kind, detail or {}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": str(self), "detail": self.detail}


class Provider(abc.ABC):
    """Places one experiment in one region at a time and always tears it down."""

    def __init__(self, experiment, *, execution_arn: str | None = None, **_: Any):
        self.experiment = experiment
        # The workflow execution placing it: tagged, so the watchdog sees when the run ended.
        self.execution_arn = execution_arn

    @abc.abstractmethod
    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        """Start placing the experiment in `region`; return the placement (region, names,
        instance type, AZ, refused attempts...). Raises ProvisionError."""

    @abc.abstractmethod
    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        """One look: {"state": "ready"|"waiting"|"failed", "placement": updated, ...}."""

    @abc.abstractmethod
    def client(self, placement: dict[str, Any]):
        """The request client (runners' backend client) for a ready placement."""

    @abc.abstractmethod
    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        """Delete what bills. Safe to call twice and on a half-made placement; returns
        {"state": "deleted"|"retry-later", ...}; "retry-later" must be retried, not dropped."""

    def collect_telemetry(self, placement: dict[str, Any], start_s: float,
                          end_s: float) -> dict[str, Any]:
        """What the backend recorded about the run between `start_s` and `end_s` (epoch
        seconds): {"files": {name: bytes}, "missing": {name: why}, "location": where}.
        Called after teardown; never raises for a source that cannot be read."""
        return {"files": {}, "missing": {}, "location": None}
