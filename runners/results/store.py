"""The results store: one interface over a local folder and an S3 prefix.

Keys are relative paths such as "runs/2026-12-03-local-gemma3-270m/<run-id>/decode.json".
Nothing is ever overwritten: writing a key that exists raises `KeyExists`.
"""

from __future__ import annotations

import abc
import json
import os
from pathlib import Path
from typing import Any


class KeyExists(FileExistsError):
    """The key is already written; results are never overwritten."""


class ResultsStore(abc.ABC):
    @abc.abstractmethod
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream"
                  ) -> str:
        """Write a new key; return where it went (path or s3:// URI)."""

    @abc.abstractmethod
    def get_bytes(self, key: str) -> bytes:
        """Raises FileNotFoundError when the key is absent."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool: ...

    @abc.abstractmethod
    def list(self, prefix: str) -> list[str]:
        """Keys under `prefix`, sorted."""

    @abc.abstractmethod
    def uri(self, key: str = "") -> str: ...

    def put_json(self, key: str, obj: Any) -> str:
        return self.put_bytes(key, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode(),
                              "application/json")

    def put_text(self, key: str, text: str, content_type: str = "text/plain") -> str:
        return self.put_bytes(key, text.encode(), content_type)

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def get_json_or_none(self, key: str) -> Any:
        try:
            return self.get_json(key)
        except FileNotFoundError:
            return None

    # A step the workflow may repeat (provision in the next region, a teardown retried)
    # writes each attempt beside the last: <stem>.json, <stem>.2.json, <stem>.3.json ...

    def put_json_attempt(self, stem: str, obj: Any) -> str:
        """Write `obj` as the next attempt of `stem` (a key without ".json"); return the key."""
        attempt = 1
        while True:
            key = attempt_key(stem, attempt)
            try:
                self.put_json(key, obj)
                return key
            except KeyExists:
                attempt += 1



def attempt_key(stem: str, attempt: int) -> str:
    return f"{stem}.json" if attempt == 1 else f"{stem}.{attempt}.json"


def latest_attempt_key(stem: str, keys: set[str]) -> str | None:
    """The last attempt of `stem` among `keys` (one listing of the run), or None."""
    if attempt_key(stem, 1) not in keys:
        return None
    attempt = 1
    while attempt_key(stem, attempt + 1) in keys:
        attempt += 1
    return attempt_key(stem, attempt)


class LocalStore(ResultsStore):
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"{key!r} leaves the store root")
        return path

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "xb") as fh:  # "x": fail rather than overwrite
                fh.write(data)
        except FileExistsError:
            raise KeyExists(f"{path}: already written; results are never overwritten") from None
        return str(path)

    def get_bytes(self, key):
        return self._path(key).read_bytes()

    def exists(self, key):
        return self._path(key).exists()

    def list(self, prefix):
        base = self._path(prefix) if prefix else self.root.resolve()
        if not base.is_dir():
            return []
        root = self.root.resolve()
        return sorted(str(p.relative_to(root)) for p in base.rglob("*") if p.is_file())

    def uri(self, key=""):
        return str(self.root / key) if key else str(self.root)


class S3Store(ResultsStore):
    def __init__(self, bucket: str, prefix: str = "", client=None):
        import boto3  # only the S3 store needs it

        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.s3 = client or boto3.client("s3")

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        if self.exists(key):
            raise KeyExists(f"{self.uri(key)}: already written; results are never overwritten")
        try:
            # IfNoneMatch closes the race between the check above and the write.
            self.s3.put_object(Bucket=self.bucket, Key=self._key(key), Body=data,
                               ContentType=content_type, IfNoneMatch="*")
        except self.s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed",
                                                             "ConditionalRequestConflict"):
                raise KeyExists(f"{self.uri(key)}: already written") from None
            raise
        return self.uri(key)

    def get_bytes(self, key):
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            raise FileNotFoundError(self.uri(key)) from None

    def exists(self, key):
        try:
            self.s3.head_object(Bucket=self.bucket, Key=self._key(key))
        except self.s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def list(self, prefix):
        keys = []
        strip = len(self.prefix) + 1 if self.prefix else 0
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._key(prefix))
        for page in pages:
            keys += [obj["Key"][strip:] for obj in page.get("Contents", [])]
        return sorted(keys)

    def uri(self, key=""):
        return f"s3://{self.bucket}/{self._key(key)}"


def open_store(location: str | os.PathLike) -> ResultsStore:
    """`s3://bucket/prefix` or a local folder."""
    text = str(location)
    if text.startswith("s3://"):
        bucket, _, prefix = text[5:].partition("/")
        return S3Store(bucket, prefix)
    return LocalStore(text)


def run_prefix(date: str, experiment: str, run_id: str) -> str:
    """runs/<YYYY-MM-DD>-<experiment>/<run-id>/ (DESIGN.md)."""
    return f"runs/{date}-{experiment}/{run_id}/"
