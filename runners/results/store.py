"""The results store: one interface over a local folder and an S3 prefix.

Keys are relative paths such as "runs/2026-12-03-local-gemma3-270m/<run-id>/decode.json".
Nothing is ever overwritten: writing a key that exists raises `KeyExists`.
"""

from __future__ import annotations

import abc
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable


class KeyExists(FileExistsError):
    """The key is already written; results are never overwritten."""


class CorruptFile(ValueError):
    """A stored file that does not parse; the message names it."""


class StoreUnusable(RuntimeError):
    """The store cannot write and read back a key: nothing should start."""


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

    def open_lines(self, key: str) -> "LineWriter":
        """A new JSON-lines key written as lines come. This default keeps them until
        `close` (S3 has no append); LocalStore writes each line through at once."""
        return BufferedLines(self, key)

    def put_json(self, key: str, obj: Any) -> str:
        return self.put_bytes(key, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode(),
                              "application/json")

    def put_text(self, key: str, text: str, content_type: str = "text/plain") -> str:
        return self.put_bytes(key, text.encode(), content_type)

    def get_json(self, key: str) -> Any:
        data = self.get_bytes(key)
        try:
            return json.loads(data)
        except ValueError as exc:  # not JSON, or not UTF-8 text
            raise CorruptFile(f"{self.uri(key)}: not valid JSON: {exc}") from None

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



class LineWriter(abc.ABC):
    @abc.abstractmethod
    def write(self, line: str) -> None:
        """Add one line (without its newline)."""

    @abc.abstractmethod
    def close(self) -> None: ...


class BufferedLines(LineWriter):
    def __init__(self, store: ResultsStore, key: str):
        self.store, self.key, self.lines = store, key, []

    def write(self, line: str) -> None:
        self.lines.append(line)

    def close(self) -> None:
        if self.lines:
            self.store.put_text(self.key, "\n".join(self.lines) + "\n", "application/x-ndjson")
            self.lines = []


class _FileLines(LineWriter):
    """Created at the first line (a phase that sent nothing leaves no file), flushed per
    line: a killed run keeps every record written before the kill."""

    def __init__(self, store: "LocalStore", key: str):
        self.store, self.key = store, key
        self.fh: IO[str] | None = None

    def write(self, line: str) -> None:
        if self.fh is None:
            path = self.store._path(self.key)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.fh = open(path, "x", encoding="utf-8")
            except FileExistsError:
                raise KeyExists(f"{path}: already written; results are never overwritten") \
                    from None
        self.fh.write(line + "\n")
        self.fh.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def probe(store: ResultsStore, key: str) -> None:
    """Write `key` and read it back before anything is placed; StoreUnusable says why."""
    data = b'{"probe": "the store takes writes and gives them back"}\n'
    try:
        store.put_bytes(key, data, "application/json")
        back = store.get_bytes(key)
    except Exception as exc:  # S3 raises many unrelated classes: each is a reason to stop
        raise StoreUnusable(f"{store.uri()}: cannot write and read back {key}: "
                            f"{type(exc).__name__}: {exc}") from None
    if back != data:
        raise StoreUnusable(f"{store.uri()}: {key} read back differs from what was written")


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

    def open_lines(self, key):
        return _FileLines(self, key)

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
        try:
            self.s3 = client or boto3.client("s3")
        except Exception as exc:  # a broken profile or config: no client to try with
            raise StoreUnusable(f"{self.uri()}: cannot open an S3 client: "
                                f"{type(exc).__name__}: {exc}") from None

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


class FallbackStore(ResultsStore):
    """The run's store, and a local folder it falls back to when the store fails mid-run.

    Everything written is kept in memory too (phase JSON and request records: small), so
    on the first failure it is written again into the local folder, which then holds the
    whole run and takes the rest of it, report included. `notify` gets one line saying so.
    """

    def __init__(self, primary: ResultsStore, fallback_root: str | Path,
                 notify: Callable[[str], None]):
        self.primary, self.active = primary, primary
        self.fallback_root, self.notify = Path(fallback_root), notify
        self.failure: str | None = None
        self._written: dict[str, tuple[bytes, str]] = {}
        self._writers: list[_FallbackLines] = []

    @property
    def fell_back(self) -> bool:
        return self.active is not self.primary

    def _switch(self, exc: Exception) -> None:
        if self.fell_back:
            raise exc  # the local folder failed too: nothing better to do than say so
        self.failure = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        local = LocalStore(self.fallback_root)
        for key, (data, content_type) in self._written.items():
            try:
                local.put_bytes(key, data, content_type)
            except KeyExists:
                pass
        self.active = local
        for writer in self._writers:
            writer.move_to(local)
        self.notify(f"store {self.primary.uri()} failed ({self.failure}); the run goes on "
                    f"in {local.uri()}")

    def _call(self, method: str, *args):
        try:
            return getattr(self.active, method)(*args)
        except (KeyExists, FileNotFoundError):
            raise
        except Exception as exc:
            self._switch(exc)
            return getattr(self.active, method)(*args)

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        where = self._call("put_bytes", key, data, content_type)
        self._written[key] = (data, content_type)
        return where

    def get_bytes(self, key):
        return self._call("get_bytes", key)

    def exists(self, key):
        return self._call("exists", key)

    def list(self, prefix):
        return self._call("list", prefix)

    def uri(self, key=""):
        return self.active.uri(key)

    def open_lines(self, key):
        writer = _FallbackLines(self, key)
        self._writers.append(writer)
        return writer


class _FallbackLines(LineWriter):
    def __init__(self, store: FallbackStore, key: str):
        self.store, self.key, self.lines = store, key, []
        self.inner = store.active.open_lines(key)

    def move_to(self, local: ResultsStore) -> None:
        self.inner = local.open_lines(self.key)
        for line in self.lines:
            self.inner.write(line)

    def write(self, line: str) -> None:
        self.lines.append(line)
        try:
            self.inner.write(line)
        except KeyExists:
            raise
        except Exception as exc:
            self.store._switch(exc)  # move_to replays every line, this one included

    def close(self) -> None:
        try:
            self.inner.close()
        except KeyExists:
            raise
        except Exception as exc:
            self.store._switch(exc)
            self.inner.close()
        self.store._written[self.key] = (
            "".join(f"{line}\n" for line in self.lines).encode(), "application/x-ndjson")
        self.store._writers.remove(self)


def fallback_root() -> Path:
    """Where a failing store's run goes on: ./benchstack-fallback, or the temp folder when
    the current folder takes no writes."""
    here = Path.cwd() / "benchstack-fallback"
    try:
        here.mkdir(exist_ok=True)
        return here
    except OSError:
        return Path(tempfile.gettempdir()) / "benchstack-fallback"


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
