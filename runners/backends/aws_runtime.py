"""boto3 clients for measuring requests (bedrock-runtime, sagemaker-runtime).

One attempt per request: a retried throttle would hide inside the latency it measures, so
throttles are counted as such (aws_errors.classify). The pool is sized for the highest
load concurrency, and the read timeout for a long generation.
"""

from __future__ import annotations

from typing import Callable

MAX_POOL_CONNECTIONS = 64
READ_TIMEOUT_S = 300


def runtime_client(service: str, region: str, session=None):
    import boto3
    from botocore.config import Config

    return (session or boto3.Session()).client(
        service, region_name=region,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1},
                      max_pool_connections=MAX_POOL_CONNECTIONS, read_timeout=READ_TIMEOUT_S))


def stream_closer(stream) -> Callable[[], None]:
    """What cancels a botocore event stream from another thread. Closing a socket does not
    wake a thread blocked reading it; urllib3's HTTPResponse.shutdown() (urllib3 2.3+) shuts
    it for reading, which does. botocore's EventStream keeps that response as `_raw_stream`;
    without either, closing is all that is left (the read then ends at its read timeout)."""

    def close() -> None:
        shutdown = getattr(getattr(stream, "_raw_stream", None), "shutdown", None)
        if shutdown is not None:
            try:
                shutdown()
            except (ValueError, RuntimeError, OSError):  # released or never connected
                pass
        getattr(stream, "close", lambda: None)()

    return close
