"""What every backend client returns for one request, and the request it was asked.

Times are `time.perf_counter()` seconds, so differences are exact; `wall_offset_s` turns
them into epoch seconds for the records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from runners.backends import cancel
from runners.backends.shapes import BadReply

# perf_counter has no epoch; this offset maps it onto wall-clock time once per process.
WALL_OFFSET_S = time.time() - time.perf_counter()

OK, ERROR, THROTTLED, TIMEOUT, DEGENERATE = "ok", "error", "throttled", "timeout", "degenerate"

# Without an experiment's `benchmark.request_deadline_s`, a whole request (connect to last
# byte) may take this fixed allowance for queueing and prefill plus its max_tokens at the
# floor rate; a server slower than that is not one worth measuring, and one that trickles
# or never answers must not hold a phase for hours.
DEADLINE_BASE_S = 60.0
DEADLINE_FLOOR_TOKENS_PER_S = 2.0


def default_deadline_s(max_tokens: int) -> float:
    return DEADLINE_BASE_S + max_tokens / DEADLINE_FLOOR_TOKENS_PER_S


@dataclass
class Ask:
    """One chat request, in OpenAI message format (clients translate where they must)."""

    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float = 0.0
    stream: bool = False
    force_tokens: bool = False  # generate exactly max_tokens (ignore_eos where the engine has it)
    tools: list[dict[str, Any]] | None = None  # OpenAI "tools" list
    deadline_s: float | None = None  # whole request; None = default_deadline_s(max_tokens)

    def whole_deadline_s(self) -> float:
        return self.deadline_s if self.deadline_s is not None else \
            default_deadline_s(self.max_tokens)


@dataclass
class Reply:
    status: str = OK  # OK | ERROR | THROTTLED | TIMEOUT | DEGENERATE
    text: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments"}]
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage_source: str = "missing"  # "server" | "missing" (then completion_tokens is None)
    http_status: int | None = None
    error: str | None = None
    intended_s: float | None = None  # when the scheduler meant to send (load phase)
    send_s: float = 0.0  # when the request was handed to the connection
    first_s: float | None = None  # first chunk carrying generated content of any kind
    last_s: float | None = None  # last byte of the response
    chunk_s: list[float] = field(default_factory=list)  # receive time of each content chunk

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def start_s(self) -> float:
        """Latency is measured from the intended send time when there is one."""
        return self.intended_s if self.intended_s is not None else self.send_s

    def record(self, phase: str, **extra: Any) -> dict[str, Any]:
        """One line of requests.jsonl."""

        def wall(t: float | None) -> float | None:
            return None if t is None else round(t + WALL_OFFSET_S, 6)

        line = {
            "phase": phase, "status": self.status, "http_status": self.http_status,
            "error": self.error, "intended_at": wall(self.intended_s), "sent_at": wall(self.send_s),
            "first_at": wall(self.first_s), "last_at": wall(self.last_s),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "usage_source": self.usage_source, "chunks": len(self.chunk_s),
            "finish_reason": self.finish_reason,
        }
        line.update(extra)
        return line


class BackendClient:
    """Common surface: `chat(ask) -> Reply`, which never raises on any reply.

    Subclasses implement `_exchange(ask, reply)`, which fills `reply` and may raise: a
    `BadReply` (a reply of the wrong shape) becomes an error with its reason, anything
    else an error naming the exception. A cancelled run sends nothing more.
    """

    supports_tools = False
    name = "backend"

    def chat(self, ask: Ask, intended_s: float | None = None) -> Reply:
        reply = Reply(intended_s=intended_s)
        reply.send_s = time.perf_counter()
        if cancel.cancelled():
            reply.status, reply.error = ERROR, f"{cancel.reason()} (not sent)"
        else:
            try:
                self._exchange(ask, reply)
            except BadReply as exc:
                reply.status, reply.error = ERROR, f"bad reply: {exc}"[:300]
            except Exception as exc:  # never raise: the phase records and goes on
                reply.status, reply.error = ERROR, f"{type(exc).__name__}: {exc}"[:300]
            if cancel.cancelled() and not reply.ok:
                reply.error = f"{cancel.reason()} ({reply.error})"[:300]
        if reply.last_s is None:
            reply.last_s = time.perf_counter()
        return reply

    def _exchange(self, ask: Ask, reply: Reply) -> None:  # pragma: no cover
        raise NotImplementedError

    def count_prompt_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """The engine's own count of a chat prompt's tokens, template included, when the
        engine can tell without generating (vLLM's /tokenize); None when it cannot."""
        return None

    def prepare(self, concurrency: int) -> None:
        """Get ready for `concurrency` requests at once (e.g. open connections ahead)."""

    def close(self) -> None:
        """Release pooled connections."""
