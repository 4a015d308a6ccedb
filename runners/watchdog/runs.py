"""Whether a resource's run is still live: the status of its Step Functions execution.

The execution is found through the benchstack:execution-arn tag (runners/tags.py). The
sweep takes any callable `tags -> status | None`, so tests and other workflows can inject
their own lookup.
"""

from __future__ import annotations

import threading
from typing import Callable

from botocore.exceptions import BotoCoreError, ClientError

from runners import tags

RunStatus = Callable[[dict[str, str]], "str | None"]

# An execution in one of these has stopped; what it made should already be gone. SUCCEEDED
# counts too: teardown is the workflow's last state, so anything left after success leaked.
ENDED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


def execution_region(arn: str) -> str | None:
    """'arn:aws:states:us-east-2:123:execution:Machine:run-1' -> 'us-east-2'."""
    parts = arn.split(":")
    if len(parts) < 8 or parts[2] != "states" or parts[5] != "execution":
        return None
    return parts[3]


class StepFunctionsRuns:
    """DescribeExecution once per execution per sweep (endpoint, config and model of a run
    share one lookup); an unknown or unreadable execution is reported, never 'ended'."""

    def __init__(self, clients):
        self._clients = clients
        self._seen: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def __call__(self, resource_tags: dict[str, str]) -> str | None:
        arn = resource_tags.get(tags.EXECUTION_ARN)
        region = execution_region(arn) if arn else None
        if region is None:
            return None
        with self._lock:
            if arn in self._seen:
                return self._seen[arn]
        try:
            client = self._clients.get("stepfunctions", region)
            status = client.describe_execution(executionArn=arn)["status"]
        except ClientError as exc:
            status = f"unknown ({exc.response['Error']['Code']})"
        except BotoCoreError as exc:
            status = f"unknown ({type(exc).__name__})"
        with self._lock:
            self._seen[arn] = status
        return status
