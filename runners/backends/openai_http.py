"""OpenAI-compatible HTTP client (vLLM, llama.cpp server) on http.client.

Connections are kept alive in a pool, one per concurrent request, so a timed request
never pays a TCP handshake or a process start.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from runners.backends import openai_chat
from runners.backends.reply import ERROR, THROTTLED, TIMEOUT, Ask, BackendClient, Reply

READ_SIZE = 65536


class ConnectionPool:
    """Keep-alive connections to one host; `get` reuses an idle one or opens a new one."""

    def __init__(self, base_url: str, timeout_s: float):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"{base_url!r}: base_url must start with http:// or https://")
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.path = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self.idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue()

    def get(self) -> http.client.HTTPConnection:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout_s)
            conn.connect()
            # Small SSE writes must not wait for Nagle on our side either.
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn

    def put(self, conn: http.client.HTTPConnection) -> None:
        self.idle.put(conn)

    def warm(self, count: int) -> None:
        """Open `count` connections before a timed batch so none pays the handshake."""
        conns = [self.get() for _ in range(max(0, count - self.idle.qsize()))]
        for conn in conns:
            self.put(conn)

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get_nowait().close()


class OpenAIHTTPClient(BackendClient):
    name = "openai-http"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout_s: float = 300.0, supports_tools: bool = False,
                 force_fields: dict[str, Any] | None = None,
                 tool_fields: dict[str, Any] | None = None):
        self.pool = ConnectionPool(base_url, timeout_s)
        self.model = model
        self.supports_tools = supports_tools
        self.force_fields = openai_chat.VLLM_FORCE_FIELDS if force_fields is None else force_fields
        self.tool_fields = tool_fields or {}  # e.g. an explicit tool_choice some engines need
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def get_json(self, path: str) -> tuple[int, Any]:
        """A small GET (health, model list) on a pooled connection."""
        conn = self.pool.get()
        try:
            conn.request("GET", self.pool.path + path)
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            raise
        self.pool.put(conn)
        try:
            return resp.status, json.loads(body or b"null")
        except ValueError:
            return resp.status, None

    def chat(self, ask: Ask, intended_s: float | None = None) -> Reply:
        body = json.dumps(openai_chat.request_body(ask, self.model, self.force_fields,
                                                   self.tool_fields)).encode()
        reply = Reply(intended_s=intended_s)
        try:
            conn = self.pool.get()
        except OSError as exc:
            reply.status, reply.error = ERROR, f"connect: {exc}"
            return reply
        keep = False
        try:
            reply.send_s = time.perf_counter()
            conn.request("POST", self.pool.path + "/v1/chat/completions", body, self.headers)
            resp = conn.getresponse()
            reply.http_status = resp.status
            if resp.status != 200:
                detail = resp.read()[:300].decode("utf-8", "replace")
                reply.last_s = time.perf_counter()
                reply.status = THROTTLED if resp.status == 429 else ERROR
                reply.error = f"HTTP {resp.status}: {detail}"
                keep = not resp.will_close
            elif ask.stream:
                keep = self._read_stream(resp, reply)
            else:
                payload = json.loads(resp.read())
                reply.last_s = time.perf_counter()
                # A whole reply arrives at once: its first content is its last byte.
                reply.first_s = reply.last_s
                reply.chunk_s = [reply.last_s]
                openai_chat.parse_completion(reply, payload)
                keep = not resp.will_close
        except (socket.timeout, TimeoutError):
            reply.status, reply.error = TIMEOUT, f"no response within {self.pool.timeout_s:g} s"
        except (OSError, http.client.HTTPException, ValueError) as exc:
            reply.status, reply.error = ERROR, f"{type(exc).__name__}: {exc}"
        finally:
            if reply.last_s is None:
                reply.last_s = time.perf_counter()
            if keep:
                self.pool.put(conn)
            else:
                conn.close()
        return reply

    @staticmethod
    def _read_stream(resp: http.client.HTTPResponse, reply: Reply) -> bool:
        assembler = openai_chat.StreamAssembler(reply)
        while not assembler.done:
            try:
                data = resp.read1(READ_SIZE)
            except http.client.IncompleteRead:
                data = b""  # the server closed mid-chunk: reported below as a cut stream
            if not data:
                break
            assembler.feed(data, time.perf_counter())
        reply.last_s = time.perf_counter()
        assembler.finish()
        if not assembler.done and reply.ok:
            reply.status = ERROR
            reply.error = f"stream ended before [DONE] after {len(reply.chunk_s)} chunks"
            return False
        # Drain the terminating chunk so the connection can be reused.
        resp.read()
        return reply.ok and not resp.will_close

    def prepare(self, concurrency: int) -> None:
        self.pool.warm(concurrency)

    def close(self) -> None:
        self.pool.close()
