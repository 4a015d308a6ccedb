"""Cancelling the requests in flight, for a run that must stop now (Ctrl-C, SIGTERM, SIGHUP).

`cancel(reason)` is called from a signal handler in the main thread while worker threads
sit in socket reads. Setting a flag would not wake them: each client registers, for the
time a request is in flight, a closer that shuts its connection down, so a blocked read
returns at once; the client then sees `cancelled()` and records the request as cancelled.
Requests asked for after `cancel` are not sent. A request in the main thread needs none of
this (the signal interrupts its read and KeyboardInterrupt passes through the clients);
the closers are for the load phase's worker threads: the HTTP client shuts its socket, the
SageMaker and Bedrock streams shut theirs (aws_runtime.stream_closer). A non-streamed boto3
call in a worker thread cannot be woken and ends at its read timeout.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

_flag = threading.Event()
_reason = ["cancelled"]
# Re-entrant: the signal handler runs in the main thread, which may itself be registering.
_lock = threading.RLock()
_closers: dict[int, Callable[[], None]] = {}
_ids = itertools.count()


def cancel(reason: str) -> None:
    """Stop every request in flight and refuse new ones, until `reset`."""
    with _lock:
        _reason[0] = f"cancelled: {reason}"
        _flag.set()
        closers = list(_closers.values())
    for close in closers:
        _quietly(close)


def reset() -> None:
    """A new run starts with nothing cancelled."""
    with _lock:
        _flag.clear()
        _reason[0] = "cancelled"


def cancelled() -> bool:
    return _flag.is_set()


def reason() -> str:
    return _reason[0]


@contextmanager
def in_flight(close: Callable[[], None]) -> Iterator[None]:
    """Register `close` while a request is in flight; run it at once if already cancelled."""
    with _lock:
        key = next(_ids)
        _closers[key] = close
        late = _flag.is_set()
    if late:
        _quietly(close)
    try:
        yield
    finally:
        with _lock:
            _closers.pop(key, None)


def _quietly(close: Callable[[], None]) -> None:
    try:
        close()
    except Exception:  # a connection already gone is what cancelling wants anyway
        pass
