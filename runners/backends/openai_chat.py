"""The OpenAI chat-completions wire format, shared by the HTTP client and SageMaker's
vLLM container (which serves the same JSON on /invocations).

`StreamAssembler` turns Server-Sent Events bytes, fed in whatever pieces the transport
delivers, into a Reply with a receive time per content chunk.
"""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends import shapes
from runners.backends.reply import ERROR, Ask, Reply
from runners.backends.shapes import BadReply

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


def _apply_usage(reply: Reply, value: Any) -> None:
    usage = shapes.obj(value, "usage")
    completion = shapes.count(usage.get("completion_tokens"), "usage.completion_tokens")
    if completion is not None:
        reply.prompt_tokens = shapes.count(usage.get("prompt_tokens"), "usage.prompt_tokens")
        reply.completion_tokens = completion
        reply.usage_source = "server"


def _tool_call(call: dict[str, Any], where: str) -> dict[str, Any]:
    fn = shapes.obj(call.get("function"), f"{where}.function")
    return {"id": shapes.optional_text(call.get("id"), f"{where}.id"),
            "name": shapes.optional_text(fn.get("name"), f"{where}.function.name"),
            "arguments": shapes.text(fn.get("arguments"), f"{where}.function.arguments")}


def _reasoning(part: dict[str, Any], where: str) -> str:
    return (shapes.text(part.get("reasoning_content"), f"{where}.reasoning_content")
            or shapes.text(part.get("reasoning"), f"{where}.reasoning"))


def parse_completion(reply: Reply, payload: Any) -> Reply:
    """Fill `reply` from a non-streamed chat completion; raises BadReply on a wrong shape."""
    payload = shapes.required_obj(payload, "response body")
    choices = shapes.objects(payload.get("choices"), "choices")
    if not choices:
        reply.status, reply.error = ERROR, "response has no choices"
        return reply
    message = shapes.obj(choices[0].get("message"), "choices[0].message")
    reply.text = shapes.text(message.get("content"), "choices[0].message.content")
    reply.reasoning = _reasoning(message, "choices[0].message")
    reply.tool_calls = [_tool_call(c, f"choices[0].message.tool_calls[{i}]") for i, c in
                        enumerate(shapes.objects(message.get("tool_calls"),
                                                 "choices[0].message.tool_calls"))]
    reply.finish_reason = shapes.optional_text(choices[0].get("finish_reason"),
                                               "choices[0].finish_reason")
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
        except ValueError:  # also a UnicodeDecodeError
            raise BadReply(f"SSE data is not JSON: {data[:80]!r}") from None
        event = shapes.required_obj(event, "SSE event")
        if "error" in event:
            self.reply.status, self.reply.error = ERROR, str(event["error"])[:300]
            return
        _apply_usage(self.reply, event.get("usage"))
        for i, choice in enumerate(shapes.objects(event.get("choices"), "SSE choices")):
            self._delta(shapes.obj(choice.get("delta"), f"SSE choices[{i}].delta"), received_s)
            finish = shapes.optional_text(choice.get("finish_reason"),
                                          f"SSE choices[{i}].finish_reason")
            if finish:
                self.reply.finish_reason = finish

    def _delta(self, delta: dict[str, Any], received_s: float) -> None:
        text = shapes.text(delta.get("content"), "SSE delta.content")
        reasoning = _reasoning(delta, "SSE delta")
        calls = shapes.objects(delta.get("tool_calls"), "SSE delta.tool_calls")
        if not (text or reasoning or calls):
            return  # a role-only or empty chunk is not generated content
        reply = self.reply
        if reply.first_s is None:
            reply.first_s = received_s
        reply.chunk_s.append(received_s)
        reply.text += text
        reply.reasoning += reasoning
        for call in calls:
            where = "SSE delta.tool_calls[]"
            slot = self._calls.setdefault(shapes.index(call.get("index"), f"{where}.index"),
                                          {"id": None, "name": "", "arguments": ""})
            part = _tool_call(call, where)
            slot["id"] = part["id"] or slot["id"]
            slot["name"] += part["name"] or ""
            slot["arguments"] += part["arguments"]

    def finish(self) -> Reply:
        if self.buffer.strip():
            self._line(self.buffer.strip(), time.perf_counter())
            self.buffer = b""
        self.reply.tool_calls = [self._calls[i] for i in sorted(self._calls)]
        return self.reply
