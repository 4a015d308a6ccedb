"""Calling the EC2 API: throttling retried with capped exponential backoff and full jitter.

A benchmark fans out over regions and AZs; when EC2 throttles (RequestLimitExceeded), the
call waits and retries a bounded number of times instead of failing the run. Everything
else is the caller's to judge.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from botocore.exceptions import ClientError

THROTTLING_CODES = frozenset({
    "RequestLimitExceeded",  # EC2's own throttling code
    "Throttling", "ThrottlingException", "TooManyRequestsException",  # SSM and others
    "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable",  # retry-safe 5xx
})
# An id EC2 has just returned may not be visible to the next call yet: "Eventual
# consistency in the Amazon EC2 API" (EC2 API reference) says to retry with backoff.
NOT_YET_VISIBLE_CODES = frozenset({"InvalidInstanceID.NotFound"})
MAX_ATTEMPTS = 6
BASE_DELAY_S = 0.5
MAX_DELAY_S = 20.0


def error_code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def backoff_delay_s(attempt: int, rng: random.Random, base_s: float = BASE_DELAY_S,
                    cap_s: float = MAX_DELAY_S) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)] (attempt counts from 0)."""
    return rng.uniform(0.0, min(cap_s, base_s * 2 ** attempt))


def call(operation: Callable[..., dict[str, Any]], /, *, attempts: int = MAX_ATTEMPTS,
         sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
         also_retry: frozenset[str] = frozenset(), **params: Any) -> dict[str, Any]:
    """`operation(**params)`, retried while it is throttled (or fails with a code in
    `also_retry`, e.g. NOT_YET_VISIBLE_CODES for an id just created); the last error is
    raised."""
    rng = rng or random.Random()
    retried = THROTTLING_CODES | also_retry
    for attempt in range(attempts):
        try:
            return operation(**params)
        except ClientError as exc:
            if error_code(exc) not in retried or attempt == attempts - 1:
                raise
            sleep(backoff_delay_s(attempt, rng))
    raise AssertionError("unreachable: the loop returns or raises")
