"""The Recorder: sends one phase's requests, checks every reply for degeneracy and keeps
one record per request for requests/<phase>.jsonl."""

from __future__ import annotations

import json
import threading
from typing import Any

from runners.backends.reply import DEGENERATE, Ask, Reply
from runners.measure import degeneracy
from runners.run_context import Run


class Recorder:
    """Sends requests for one phase, checks every reply for degeneracy, keeps the records."""

    def __init__(self, run: Run, phase: str, client):
        self.run, self.phase, self.client = run, phase, client
        self.lines: list[str] = []
        self.degenerate = 0
        self._lock = threading.Lock()  # the load phase sends from many threads

    def send(self, ask: Ask, intended_s: float | None = None, **extra: Any) -> Reply:
        reply = self.client.chat(ask, intended_s=intended_s)
        if reply.ok:
            reason = degeneracy.degenerate_reason(reply.text + reply.reasoning, reply.tool_calls)
            if reason:
                reply.status, reply.error = DEGENERATE, reason
        line = json.dumps(reply.record(self.phase, max_tokens=ask.max_tokens, stream=ask.stream,
                                       **extra))
        with self._lock:
            self.degenerate += reply.status == DEGENERATE
            self.lines.append(line)
        return reply

    def save(self) -> None:
        """requests/<phase>.jsonl; the report joins them into requests.jsonl."""
        if self.lines:
            self.run.store.put_text(self.run.key(f"requests/{self.phase}.jsonl"),
                                    "\n".join(self.lines) + "\n", "application/x-ndjson")
