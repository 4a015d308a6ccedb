"""What every backend client returns for one request, and the request it was asked.

Times are `time.perf_counter()` seconds, so differences are exact; `wall_offset_s` turns
them into epoch seconds for the records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

# perf_counter has no epoch; this offset maps it onto wall-clock time once per process.
WALL_OFFSET_S = time.time() - time.perf_counter()

OK, ERROR, THROTTLED, TIMEOUT, DEGENERATE = "ok", "error", "throttled", "timeout", "degenerate"


@dataclass
class Ask:
    """One chat request, in OpenAI message format (clients translate where they must)."""

    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float = 0.0
    stream: bool = False
    force_tokens: bool = False  # generate exactly max_tokens (ignore_eos where the engine has it)
    tools: list[dict[str, Any]] | None = None  # OpenAI "tools" list


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
    """Common surface: `chat(ask) -> Reply`; never raises for a failed request."""

    supports_tools = False
    name = "backend"

    def chat(self, ask: Ask, intended_s: float | None = None) -> Reply:  # pragma: no cover
        raise NotImplementedError

    def count_prompt_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """The engine's own count of a chat prompt's tokens, template included, when the
        engine can tell without generating (vLLM's /tokenize); None when it cannot."""
        return None

    def prepare(self, concurrency: int) -> None:
        """Get ready for `concurrency` requests at once (e.g. open connections ahead)."""

    def close(self) -> None:
        """Release pooled connections."""
