"""Retrying AWS calls that were throttled: capped exponential backoff with full jitter.

Only throttling is retried here. Every other error is an answer the caller must read
(capacity, quota, a refused delete), so it is raised at once.
"""

from __future__ import annotations

import random
import time
from typing import Callable, TypeVar

from botocore.exceptions import ClientError

T = TypeVar("T")

# Error codes AWS services use for "slow down" (SageMaker and most JSON services use the
# first two; EC2 uses RequestLimitExceeded; S3 uses SlowDown).
THROTTLING_CODES = frozenset({
    "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded",
    "SlowDown", "ProvisionedThroughputExceededException", "RequestThrottled",
})


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError, or "" for anything else."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code", "")
    return ""


def is_throttling(exc: BaseException) -> bool:
    return error_code(exc) in THROTTLING_CODES


def backoff_delay_s(attempt: int, base_s: float, cap_s: float, rand: Callable[[], float]) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)) (attempt counts from 0)."""
    return rand() * min(cap_s, base_s * (2 ** attempt))


def retry_throttled(call: Callable[[], T], *, attempts: int = 6, base_s: float = 0.5,
                    cap_s: float = 20.0, sleep: Callable[[float], None] = time.sleep,
                    rand: Callable[[], float] = random.random) -> T:
    """Run `call()`; on throttling, wait and try again, at most `attempts` times in all.

    The last throttling error is raised when the attempts run out, so a caller can still
    tell "throttled" from other failures.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as exc:
            if not is_throttling(exc) or attempt == attempts - 1:
                raise
            sleep(backoff_delay_s(attempt, base_s, cap_s, rand))
    raise AssertionError("unreachable")  # the loop returns or raises
