"""boto3 clients shared across threads, with throttling retried by backoff and jitter.

botocore's "standard" retry mode retries throttling and transient errors with capped
exponential backoff and full jitter (delay = random() * 2**attempt, at most 20 s), so
every call made through these clients gets that without a wrapper of our own.
"""

from __future__ import annotations

import threading

import boto3
from botocore.config import Config

RETRIES = Config(
    retries={"mode": "standard", "max_attempts": 6},
    connect_timeout=5,
    read_timeout=30,
)


class Clients:
    """One client per (service, region), made on first use.

    A boto3 Session is not thread-safe, but the clients it makes are: clients are made
    under a lock and then used freely from worker threads.
    """

    def __init__(self, session: boto3.session.Session | None = None, config: Config = RETRIES):
        self.session = session or boto3.session.Session()
        self._config = config
        self._clients: dict[tuple[str, str], object] = {}
        self._lock = threading.Lock()

    def get(self, service: str, region: str):
        key = (service, region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = self.session.client(
                    service, region_name=region, config=self._config)
            return self._clients[key]
