"""An OpenAI-compatible server on 127.0.0.1 with programmed truth, for tests and the
harness-accuracy benchmark.

Timing is exact by construction: token i of a reply is ready at
`ttft_s + i * gap_s` after the request arrived, and a chunk of k tokens goes out when its
last token is ready. So the truth a client should measure is:
  TTFT = ttft_s + (k-1) gap_s, end-to-end = ttft_s + (n-1) gap_s, decode rate = 1 / gap_s,
  TPOT = (n-k) gap_s / (n-1) (= gap_s when k = 1), ITL = k gap_s.
A role-only chunk goes out at once, as real servers do, to catch a TTFT that counts it.
Prompt tokens are whitespace-separated words of the messages plus TEMPLATE_TOKENS (a chat
template's overhead), reported in `usage` and by vLLM's `POST /tokenize` (`tokenize=False`
serves no /tokenize, as llama.cpp and SageMaker); `prefill_s_per_token` adds that much TTFT
per prompt token, so a context sweep has a programmed prefill rate to find.

Faults, consumed one per chat request from `faults` (None = behave): "http500", "http429",
"hang" (answer after hang_s, past a client timeout), "cut" (close the stream mid-way),
"degenerate" ("The The The ..." with HTTP 200), "no_usage", "empty". Hostile ones:
"close" (hang up without answering), "bad_sse" (events `data: null`, `data: 42`,
`{"choices": ["x"]}`), "bad_usage" (`completion_tokens: "lots"`), "list_body" (a JSON body
or event that is a list), "no_done" (a stream that ends cleanly without [DONE]), "trickle"
(a role chunk, then an SSE comment every trickle_s until the client gives up). A `Raw`
fault sends its bytes as the whole reply (the fuzz tests' random and truncated bodies).

Natural replies are right answers: the quality questions are solved, count_ids is called
with `id >= 10` and then answered with 8, so the phases' scoring can be checked.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CAPITALS = {"Australia": "Canberra", "Canada": "Ottawa", "Brazil": "Brasília",
            "Turkey": "Ankara", "Nigeria": "Abuja", "Switzerland": "Bern",
            "Pakistan": "Islamabad", "New Zealand": "Wellington", "Morocco": "Rabat",
            "Vietnam": "Hanoi"}


@dataclass
class Truth:
    ttft_s: float = 0.020
    gap_s: float = 0.002
    tokens_per_chunk: int = 1
    hang_s: float = 2.0
    fill: bool = False  # always reply with max_tokens tokens (for harnesses without ignore_eos)
    trickle_s: float = 0.05  # the "trickle" fault's gap between keep-alive comments
    prefill_s_per_token: float = 0.0
    tokenize: bool = True  # serve vLLM's POST /tokenize

    def first_content_s(self) -> float:
        return self.ttft_s + (self.tokens_per_chunk - 1) * self.gap_s

    def e2el_s(self, tokens: int) -> float:
        return self.ttft_s + (tokens - 1) * self.gap_s

    def tpot_s(self, tokens: int) -> float:
        return (tokens - self.tokens_per_chunk) * self.gap_s / (tokens - 1)


TEMPLATE_TOKENS = 4


def prompt_tokens(body: dict[str, Any]) -> int:
    """What this server counts for a request's messages: words plus the template."""
    words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
    return TEMPLATE_TOKENS + words


def answer_for(body: dict[str, Any]) -> str:
    """A right answer to the phases' questions; "ok" to anything else."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return "Counting with the tool: 8"
    prompt = str(last.get("content") or "")
    if m := re.search(r"What is (\d+) \* (\d+)\?", prompt):
        return str(int(m[1]) * int(m[2]))
    if m := re.search(r"What is (\d+) \+ (\d+) - (\d+)\?", prompt):
        return str(int(m[1]) + int(m[2]) - int(m[3]))
    if m := re.search(r"capital of ([A-Z][\w ]+)\?", prompt):
        return CAPITALS.get(m[1], "Paris")
    return "ok"


@dataclass
class Raw:
    """A programmed reply: `body` as is, chunked (an SSE stream) or with a Content-Length."""

    body: bytes
    status: int = 200
    chunked: bool = True


BAD_SSE_EVENTS = (b"null", b"42", b'{"choices": ["x"]}', b'[1, 2]',
                  b'{"choices": [{"delta": {"content": 7}}]}')


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops SYNs when 64 clients connect at once, and a dropped
    # SYN costs a 1 s retransmit that would be blamed on the harness.
    request_queue_size = 1024

    def handle_error(self, request, client_address) -> None:
        # A client that hangs up mid-stream (a harness ending its run, a test's timeout) is
        # expected here, not an error worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    """`with LoopbackServer(truth, faults=[...]) as server:` -> server.base_url."""

    def __init__(self, truth: Truth | None = None, faults: list[str | None] | None = None,
                 port: int = 0):
        self.truth = truth or Truth()
        self.faults = list(faults or [])
        self.bodies: list[dict[str, Any]] = []
        self.lateness_s: list[float] = []  # how late the server sent each chunk, its own view
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", port), self._handler())
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_fault(self, body: dict[str, Any]) -> str | None:
        with self.lock:
            self.bodies.append(body)
            return self.faults.pop(0) if self.faults else None

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out as separate writes: without NODELAY, Nagle and
                # the peer's delayed ACK add 40 ms to every non-streamed reply.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/health":  # vLLM's; peer harnesses probe it
                    self._json(200, {})
                elif self.path.rstrip("/") == "/v1/models":
                    self._json(200, {"object": "list", "data": [{"id": "loopback"}]})
                elif self.path == "/stats":  # the server's own lateness, then start afresh
                    with server.lock:
                        late, server.lateness_s = server.lateness_s, []
                    self._json(200, {"sends": len(late), "late_max_s": max(late, default=0),
                                     "late_mean_s": sum(late) / len(late) if late else 0})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                arrived = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.rstrip("/") == "/tokenize":  # vLLM's, with chat messages
                    if not server.truth.tokenize:
                        self._json(404, {"detail": "Not Found"})
                        return
                    count = prompt_tokens(body)
                    self._json(200, {"count": count, "max_model_len": 8192,
                                     "tokens": list(range(count))})
                    return
                fault = server.next_fault(body)
                if isinstance(fault, Raw):
                    self._raw_reply(fault)
                    return
                if fault == "close":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "list_body" and not body.get("stream"):
                    self._json(200, [{"choices": []}])
                    return
                if fault in ("http500", "http429"):
                    self._json(int(fault[4:]), {"error": {"message": f"programmed {fault}"}})
                    return
                if fault == "hang":
                    time.sleep(server.truth.hang_s)
                    self.close_connection = True
                    return
                words = self._words(body, fault)
                tools = self._tool_call(body)
                if body.get("stream"):
                    self._stream(body, words, tools, arrived, fault)
                else:
                    self._complete(body, words, tools, arrived, fault)

            def _words(self, body: dict[str, Any], fault: str | None) -> list[str]:
                n = int(body.get("max_tokens") or 16)
                if fault == "empty":
                    return []
                if fault == "degenerate":
                    return ["The "] * n
                n = int(body.get("max_completion_tokens") or n)
                if server.truth.fill or body.get("ignore_eos") or body.get("min_tokens"):
                    return [f"w{i} " for i in range(n)]
                words = answer_for(body).split(" ")
                return [w + " " for w in words[:-1]] + words[-1:] if n >= len(words) else \
                    [w + " " for w in words[:n]]

            def _tool_call(self, body: dict[str, Any]) -> dict[str, Any] | None:
                messages = body.get("messages") or []
                if body.get("tools") and messages and messages[-1].get("role") == "user":
                    return {"index": 0, "id": "call-1", "type": "function", "function": {
                        "name": "count_ids", "arguments": json.dumps({"op": ">=", "value": 10})}}
                return None

            def _wait(self, target_s: float) -> None:
                delay = target_s - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                with server.lock:
                    server.lateness_s.append(time.perf_counter() - target_s)

            def _usage(self, body, words, fault) -> dict[str, Any] | None:
                if fault == "no_usage":
                    return None
                prompt = prompt_tokens(body)
                if fault == "bad_usage":
                    return {"prompt_tokens": prompt, "completion_tokens": "lots"}
                return {"prompt_tokens": prompt, "completion_tokens": len(words),
                        "total_tokens": prompt + len(words)}

            def _complete(self, body, words, tools, arrived, fault) -> None:
                truth = server.truth
                arrived += prompt_tokens(body) * truth.prefill_s_per_token
                self._wait(arrived + truth.ttft_s + max(len(words) - 1, 0) * truth.gap_s)
                message: dict[str, Any] = {"role": "assistant",
                                           "content": None if tools else "".join(words)}
                if tools:
                    message["tool_calls"] = [{k: v for k, v in tools.items() if k != "index"}]
                payload = {"id": "cmpl-1", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": "tool_calls" if tools else "length"}]}
                usage = self._usage(body, words, fault)
                if usage:
                    payload["usage"] = usage
                self._json(200, payload)

            def _stream(self, body, words, tools, arrived, fault) -> None:
                truth = server.truth
                arrived += prompt_tokens(body) * truth.prefill_s_per_token
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
                if self._hostile_stream(fault):
                    return
                k = truth.tokens_per_chunk
                chunks = [words[i:i + k] for i in range(0, len(words), k)]
                if tools:
                    chunks = [[]]
                for j, chunk in enumerate(chunks):
                    if fault == "cut" and j == len(chunks) // 2:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    last_token = j * k + max(len(chunk), 1) - 1
                    self._wait(arrived + truth.ttft_s + last_token * truth.gap_s)
                    delta = {"tool_calls": [tools]} if tools else {"content": "".join(chunk)}
                    self._event({"choices": [{"index": 0, "delta": delta,
                                              "finish_reason": None}]})
                self._event({"choices": [{"index": 0, "delta": {},
                                          "finish_reason": "tool_calls" if tools else "length"}]})
                usage = self._usage(body, words, fault)
                if usage and (body.get("stream_options") or {}).get("include_usage"):
                    self._event({"choices": [], "usage": usage})
                if fault != "no_done":
                    self._raw(b"data: [DONE]\n\n")
                self._raw(b"")

            def _hostile_stream(self, fault: str | None) -> bool:
                """Send a hostile stream's rest; False when the fault is not one of those."""
                if fault in ("bad_sse", "list_body"):
                    events = BAD_SSE_EVENTS if fault == "bad_sse" else (b"[]",)
                    for event in events:
                        self._raw(b"data: " + event + b"\n\n")
                    self._raw(b"data: [DONE]\n\n")
                    self._raw(b"")
                    return True
                if fault == "trickle":
                    try:
                        while True:  # until the client hangs up
                            time.sleep(server.truth.trickle_s)
                            self._raw(b": keep-alive\n\n")
                    except OSError:
                        self.close_connection = True
                    return True
                return False

            def _raw_reply(self, raw: Raw) -> None:
                self.send_response(raw.status)
                self.send_header("Content-Type", "text/event-stream" if raw.chunked
                                 else "application/json")
                if raw.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    if raw.body:
                        self._raw(raw.body)
                    self._raw(b"")
                else:
                    self.send_header("Content-Length", str(len(raw.body)))
                    self.end_headers()
                    self.wfile.write(raw.body)

            def _event(self, obj: dict[str, Any]) -> None:
                self._raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

            def _raw(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _json(self, status: int, obj: dict[str, Any]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve until killed; prints the base URL on the first line (for a child process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-s", type=float, default=Truth.ttft_s)
    parser.add_argument("--gap-s", type=float, default=Truth.gap_s)
    parser.add_argument("--tokens-per-chunk", type=int, default=Truth.tokens_per_chunk)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fill", action="store_true", help="always reply with max_tokens")
    args = parser.parse_args(argv)
    truth = Truth(args.ttft_s, args.gap_s, args.tokens_per_chunk, fill=args.fill)
    with LoopbackServer(truth, port=args.port) as server:
        print(server.base_url, flush=True)
        try:
            server.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
