"""The Recorder: sends one phase's requests, checks every reply for degeneracy and appends
one record per request to requests/<phase>.jsonl as each completes, so a run that is
killed keeps every finished request (the store writes lines through where it can)."""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from runners.backends.reply import DEGENERATE, OK, Ask, Reply
from runners.measure import degeneracy
from runners.run_context import Run


class Recorder:
    """Sends requests for one phase, checks every reply for degeneracy, keeps the records.

    Every request gets the experiment's `benchmark.request_deadline_s` when the Ask names
    none (the clients enforce it; without either, a deadline from max_tokens). Without a
    run (the harness-accuracy benchmark) the records stay in `lines` only."""

    def __init__(self, run: Run | None, phase: str, client):
        self.run, self.phase, self.client = run, phase, client
        self.lines: list[str] = []
        self.degenerate = 0
        self.ok = 0
        self.deadline_s = run.plan.request_deadline_s if run is not None else None
        self._sink = None
        self._lock = threading.Lock()  # the load phase sends from many threads

    def send(self, ask: Ask, intended_s: float | None = None, **extra: Any) -> Reply:
        if ask.deadline_s is None and self.deadline_s is not None:
            ask = dataclasses.replace(ask, deadline_s=self.deadline_s)
        reply = self.client.chat(ask, intended_s=intended_s)
        if reply.ok:
            reason = degeneracy.degenerate_reason(reply.text + reply.reasoning, reply.tool_calls)
            if reason:
                reply.status, reply.error = DEGENERATE, reason
        line = json.dumps(reply.record(self.phase, max_tokens=ask.max_tokens, stream=ask.stream,
                                       **extra))
        with self._lock:
            self.degenerate += reply.status == DEGENERATE
            self.ok += reply.status == OK
            self.lines.append(line)
            if self._sink is None and self.run is not None:
                self._sink = self.run.store.open_lines(
                    self.run.key(f"requests/{self.phase}.jsonl"))
            if self._sink is not None:
                self._sink.write(line)
        return reply

    def save(self) -> None:
        """Close requests/<phase>.jsonl; the report joins them into requests.jsonl."""
        with self._lock:
            if self._sink is not None:
                self._sink.close()
                self._sink = None
