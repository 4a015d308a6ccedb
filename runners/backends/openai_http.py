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

from runners.backends import cancel, openai_chat
from runners.backends.reply import ERROR, THROTTLED, TIMEOUT, Ask, BackendClient, Reply
from runners.backends.shapes import BadReply

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

    def get(self, connect_timeout_s: float | None = None) -> http.client.HTTPConnection:
        return self.checkout(connect_timeout_s)[0]

    def checkout(self, connect_timeout_s: float | None = None
                 ) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (True: reused) or a new one (False)."""
        try:
            return self.idle.get_nowait(), True
        except queue.Empty:
            return self.connect(connect_timeout_s), False

    def connect(self, connect_timeout_s: float | None = None) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=min(connect_timeout_s or self.timeout_s,
                                                     self.timeout_s))
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


class _DeadlinePassed(Exception):
    """The whole-request deadline passed between two reads."""


class _Deadline:
    """The whole request's deadline, applied as the socket timeout before every read: a
    server that trickles a byte at a time cannot stretch a request past it."""

    def __init__(self, total_s: float, read_timeout_s: float):
        self.total_s, self.read_timeout_s = total_s, read_timeout_s
        self.end_s = time.perf_counter() + total_s

    def passed(self) -> bool:
        return time.perf_counter() >= self.end_s

    def arm(self, conn: http.client.HTTPConnection) -> None:
        left = self.end_s - time.perf_counter()
        if left <= 0:
            raise _DeadlinePassed()
        if conn.sock is not None:
            conn.sock.settimeout(min(left, self.read_timeout_s))


def _read_all(resp: http.client.HTTPResponse, deadline: _Deadline,
              conn: http.client.HTTPConnection) -> bytes:
    """The rest of the body, one read at a time so the deadline holds for each."""
    parts = []
    while True:
        deadline.arm(conn)
        part = resp.read1(READ_SIZE)
        if not part:
            resp.read()  # b"" at the end, and it marks the response finished for reuse
            return b"".join(parts)
        parts.append(part)


def _shut(conn: http.client.HTTPConnection) -> None:
    """Wake a read blocked on `conn` in another thread: shutdown, unlike close, does."""
    if conn.sock is not None:
        conn.sock.shutdown(socket.SHUT_RDWR)


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
        self._no_tokenize = False
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def get_json(self, path: str, body: Any = None) -> tuple[int, Any]:
        """A small GET (health, model list), or a POST of `body` as JSON, on a pooled
        connection."""
        conn = self.pool.get()
        try:
            if body is None:
                conn.request("GET", self.pool.path + path)
            else:
                conn.request("POST", self.pool.path + path, json.dumps(body).encode(),
                             {**self.headers, "Accept": "application/json"})
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

    def _exchange(self, ask: Ask, reply: Reply) -> None:
        body = json.dumps(openai_chat.request_body(ask, self.model, self.force_fields,
                                                   self.tool_fields)).encode()
        deadline = _Deadline(ask.whole_deadline_s(), self.pool.timeout_s)
        try:
            # a host that is gone costs the deadline
            conn, reused = self.pool.checkout(deadline.total_s)
        except TimeoutError:
            reply.status = TIMEOUT
            reply.error = f"connect: no connection within the {deadline.total_s:g} s deadline"
            return
        except OSError as exc:
            reply.status, reply.error = ERROR, f"connect: {exc}"
            return
        keep = False
        try:
            with cancel.in_flight(lambda: _shut(conn)):
                while True:
                    try:
                        reply.send_s = time.perf_counter()
                        deadline.arm(conn)
                        conn.request("POST", self.pool.path + "/v1/chat/completions", body,
                                     self.headers)
                        deadline.arm(conn)
                        resp = conn.getresponse()
                        break
                    except ConnectionError:  # BrokenPipe, reset, RemoteDisconnected
                        # A kept-alive connection the server closed while it sat idle
                        # (uvicorn, under vLLM and llama-cpp-python, closes after 5 s):
                        # nothing was served on it, so send once on a new connection, as
                        # urllib3 does. A new connection failing is the server's answer.
                        if not reused or cancel.cancelled():
                            raise
                        conn.close()
                        conn, reused = self.pool.connect(deadline.total_s), False
                reply.http_status = resp.status
                if resp.status != 200:
                    detail = _read_all(resp, deadline, conn)[:300].decode("utf-8", "replace")
                    reply.last_s = time.perf_counter()
                    reply.status = THROTTLED if resp.status == 429 else ERROR
                    reply.error = f"HTTP {resp.status}: {detail}"
                    keep = not resp.will_close
                elif ask.stream:
                    keep = self._read_stream(resp, reply, deadline, conn)
                else:
                    data = _read_all(resp, deadline, conn)
                    reply.last_s = time.perf_counter()
                    # A whole reply arrives at once: its first content is its last byte.
                    reply.first_s = reply.last_s
                    reply.chunk_s = [reply.last_s]
                    try:
                        payload = json.loads(data)
                    except ValueError:
                        raise BadReply(f"response body is not JSON: {data[:80]!r}") from None
                    openai_chat.parse_completion(reply, payload)
                    keep = not resp.will_close
        except _DeadlinePassed:
            reply.status = TIMEOUT
            reply.error = f"no complete reply within the {deadline.total_s:g} s request deadline"
        except (socket.timeout, TimeoutError):
            reply.status = TIMEOUT
            reply.error = (f"no complete reply within the {deadline.total_s:g} s request "
                           "deadline" if deadline.passed() else
                           f"no response within {self.pool.timeout_s:g} s")
        except (OSError, http.client.HTTPException) as exc:
            reply.status, reply.error = ERROR, f"{type(exc).__name__}: {exc}"
        finally:
            if reply.last_s is None:
                reply.last_s = time.perf_counter()
            if keep and not cancel.cancelled():  # only a reply read to its end
                self.pool.put(conn)
            else:
                conn.close()

    @staticmethod
    def _read_stream(resp: http.client.HTTPResponse, reply: Reply, deadline: "_Deadline",
                     conn: http.client.HTTPConnection) -> bool:
        assembler = openai_chat.StreamAssembler(reply)
        while not assembler.done:
            deadline.arm(conn)
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
        _read_all(resp, deadline, conn)
        return reply.ok and not resp.will_close

    def count_prompt_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """vLLM's `POST /tokenize` with chat messages applies the chat template with the
        generation prompt (TokenizeChatRequest, add_generation_prompt defaults to true) and
        answers {"count", "max_model_len", "tokens"}. llama.cpp's /tokenize takes "content"
        and answers without "count", so only an answer with "count" is believed."""
        if self._no_tokenize:
            return None
        try:
            status, answer = self.get_json("/tokenize", {"model": self.model,
                                                         "messages": messages})
        except (OSError, http.client.HTTPException):
            status, answer = None, None
        if status == 200 and isinstance(answer, dict) and isinstance(answer.get("count"), int):
            return answer["count"]
        self._no_tokenize = True  # ask once; the engine will not grow the route mid-run
        return None

    def prepare(self, concurrency: int) -> None:
        self.pool.warm(concurrency)

    def close(self) -> None:
        self.pool.close()
