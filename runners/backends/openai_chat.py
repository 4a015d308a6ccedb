"""The OpenAI chat-completions wire format, shared by the HTTP client and SageMaker's
vLLM container (which serves the same JSON on /invocations).

`StreamAssembler` turns Server-Sent Events bytes, fed in whatever pieces the transport
delivers, into a Reply with a receive time per content chunk.
"""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends.reply import ERROR, Ask, Reply

# vLLM's way of forcing an exact reply length; engines that differ pass their own.
VLLM_FORCE_FIELDS: dict[str, Any] = {"ignore_eos": True}


def request_body(ask: Ask, model: str, force_fields: dict[str, Any],
                 tool_fields: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model, "messages": ask.messages, "max_tokens": ask.max_tokens,
        "temperature": ask.temperature, "stream": ask.stream,
    }
    if ask.stream:
        body["stream_options"] = {"include_usage": True}
    if ask.force_tokens:
        body.update(force_fields)
        body.setdefault("min_tokens", ask.max_tokens)
    if ask.tools:
        body["tools"] = ask.tools
        body.update(tool_fields or {})
    return body


def _apply_usage(reply: Reply, usage: dict[str, Any] | None) -> None:
    if usage and usage.get("completion_tokens") is not None:
        reply.prompt_tokens = usage.get("prompt_tokens")
        reply.completion_tokens = usage["completion_tokens"]
        reply.usage_source = "server"


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    return {"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments") or ""}


def parse_completion(reply: Reply, payload: dict[str, Any]) -> Reply:
    """Fill `reply` from a non-streamed chat completion."""
    choices = payload.get("choices") or []
    if not choices:
        reply.status, reply.error = ERROR, "response has no choices"
        return reply
    message = choices[0].get("message") or {}
    reply.text = message.get("content") or ""
    reply.reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    reply.tool_calls = [_tool_call(c) for c in message.get("tool_calls") or []]
    reply.finish_reason = choices[0].get("finish_reason")
    _apply_usage(reply, payload.get("usage"))
    return reply


class StreamAssembler:
    """Feed SSE bytes as they arrive; `reply` accumulates text, tool calls and chunk times."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.buffer = b""
        self.done = False
        self._calls: dict[int, dict[str, Any]] = {}

    def feed(self, data: bytes, received_s: float | None = None) -> None:
        received_s = time.perf_counter() if received_s is None else received_s
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            self._line(line.strip(), received_s)

    def _line(self, line: bytes, received_s: float) -> None:
        if not line.startswith(b"data:"):
            return  # blank separators, comments, "event:" lines
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            self.reply.status, self.reply.error = ERROR, f"bad SSE data: {data[:80]!r}"
            return
        if "error" in event:
            self.reply.status, self.reply.error = ERROR, str(event["error"])[:300]
            return
        _apply_usage(self.reply, event.get("usage"))
        for choice in event.get("choices") or []:
            self._delta(choice.get("delta") or {}, received_s)
            if choice.get("finish_reason"):
                self.reply.finish_reason = choice["finish_reason"]

    def _delta(self, delta: dict[str, Any], received_s: float) -> None:
        text = delta.get("content") or ""
        reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
        calls = delta.get("tool_calls") or []
        if not (text or reasoning or calls):
            return  # a role-only or empty chunk is not generated content
        reply = self.reply
        if reply.first_s is None:
            reply.first_s = received_s
        reply.chunk_s.append(received_s)
        reply.text += text
        reply.reasoning += reasoning
        for call in calls:
            slot = self._calls.setdefault(call.get("index", 0), {"id": None, "name": "",
                                                                  "arguments": ""})
            fn = call.get("function") or {}
            slot["id"] = call.get("id") or slot["id"]
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""

    def finish(self) -> Reply:
        if self.buffer.strip():
            self._line(self.buffer.strip(), time.perf_counter())
            self.buffer = b""
        self.reply.tool_calls = [self._calls[i] for i in sorted(self._calls)]
        return self.reply
