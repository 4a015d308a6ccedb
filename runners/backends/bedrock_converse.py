"""Bedrock client: Converse and ConverseStream.

Requests arrive in OpenAI message format and are translated here. Bedrock has no way to
force a reply length, so `force_tokens` is not honoured; the decode phase then reports
its token counts as unverified instead of pretending.
"""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends import aws_errors, aws_runtime, cancel, shapes
from runners.backends.reply import ERROR, THROTTLED, TIMEOUT, Ask, BackendClient, Reply
from runners.backends.shapes import BadReply


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except ValueError:
        args = {}
    return {"toolUse": {"toolUseId": call.get("id") or "call", "name": fn.get("name"),
                        "input": args}}


def to_converse(messages: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """OpenAI messages -> (system blocks, Converse messages)."""
    system: list[dict] = []
    out: list[dict] = []
    for msg in messages:
        role, content = msg["role"], msg.get("content") or ""
        if role == "system":
            system.append({"text": content})
            continue
        if role == "tool":
            block = {"toolResult": {"toolUseId": msg.get("tool_call_id") or "call",
                                    "content": [{"text": content}]}}
            if out and out[-1]["role"] == "user" and "toolResult" in out[-1]["content"][-1]:
                out[-1]["content"].append(block)  # results of parallel calls go together
            else:
                out.append({"role": "user", "content": [block]})
            continue
        blocks = [{"text": content}] if content else []
        blocks += [_tool_use(c) for c in msg.get("tool_calls") or []]
        out.append({"role": role, "content": blocks})
    return system, out


def tool_config(tools: list[dict[str, Any]]) -> dict[str, Any]:
    specs = []
    for tool in tools:
        fn = tool["function"]
        specs.append({"toolSpec": {"name": fn["name"], "description": fn.get("description", ""),
                                   "inputSchema": {"json": fn.get("parameters", {})}}})
    return {"tools": specs}


class BedrockConverseClient(BackendClient):
    name = "bedrock-converse"
    supports_tools = True

    def __init__(self, runtime, model_id: str):
        self.runtime = runtime  # boto3.client("bedrock-runtime")
        self.model_id = model_id

    def _kwargs(self, ask: Ask) -> dict[str, Any]:
        system, messages = to_converse(ask.messages)
        kwargs: dict[str, Any] = {
            "modelId": self.model_id, "messages": messages,
            "inferenceConfig": {"maxTokens": ask.max_tokens, "temperature": ask.temperature},
        }
        if system:
            kwargs["system"] = system
        if ask.tools:
            kwargs["toolConfig"] = tool_config(ask.tools)
        return kwargs

    def _exchange(self, ask: Ask, reply: Reply) -> None:
        try:
            if ask.stream:
                self._stream(self.runtime.converse_stream(**self._kwargs(ask)), reply,
                             reply.send_s + ask.whole_deadline_s(), ask.whole_deadline_s())
            else:
                resp = self.runtime.converse(**self._kwargs(ask))
                reply.last_s = reply.first_s = time.perf_counter()
                reply.chunk_s = [reply.last_s]
                self._message(shapes.required_obj(resp, "response"), reply)
            reply.http_status = 200
        except BadReply:
            raise
        except Exception as exc:  # botocore raises many unrelated classes; sort them by shape
            reply.status, reply.error = aws_errors.classify(exc)

    @staticmethod
    def _usage(reply: Reply, value: Any, where: str) -> None:
        usage = shapes.obj(value, where)
        output = shapes.count(usage.get("outputTokens"), f"{where}.outputTokens")
        if output is not None:
            reply.prompt_tokens = shapes.count(usage.get("inputTokens"), f"{where}.inputTokens")
            reply.completion_tokens = output
            reply.usage_source = "server"

    def _message(self, resp: dict[str, Any], reply: Reply) -> None:
        message = shapes.obj(shapes.obj(resp.get("output"), "output").get("message"),
                             "output.message")
        where = "output.message.content"
        for i, block in enumerate(shapes.objects(message.get("content"), where)):
            if "text" in block:
                reply.text += shapes.text(block["text"], f"{where}[{i}].text")
            elif "toolUse" in block:
                use = shapes.obj(block["toolUse"], f"{where}[{i}].toolUse")
                reply.tool_calls.append({
                    "id": shapes.optional_text(use.get("toolUseId"), f"{where}[{i}].toolUseId"),
                    "name": shapes.optional_text(use.get("name"), f"{where}[{i}].name"),
                    "arguments": json.dumps(use.get("input") or {})})
            elif "reasoningContent" in block:
                content = shapes.obj(block["reasoningContent"], f"{where}[{i}].reasoningContent")
                reply.reasoning += shapes.text(
                    shapes.obj(content.get("reasoningText"), "reasoningText").get("text"),
                    f"{where}[{i}].reasoningText.text")
        reply.finish_reason = shapes.optional_text(resp.get("stopReason"), "stopReason")
        self._usage(reply, resp.get("usage"), "usage")

    def _stream(self, resp: dict[str, Any], reply: Reply, end_s: float,
                deadline_s: float) -> None:
        calls: dict[int, dict[str, Any]] = {}
        stopped = False
        stream = shapes.required_obj(resp, "response").get("stream")
        if stream is None:
            raise BadReply("response has no stream")
        # botocore offers no per-call deadline: it is checked between events, and a
        # cancelled run shuts the stream's socket.
        with cancel.in_flight(aws_runtime.stream_closer(stream)):
            for event in stream:
                now = time.perf_counter()
                if now > end_s:
                    reply.status = TIMEOUT
                    reply.error = f"no complete reply within the {deadline_s:g} s request deadline"
                    break
                event = shapes.required_obj(event, "stream event")
                if not self._event(event, reply, calls, now):
                    stopped |= "messageStop" in event
                    continue
                break
        reply.last_s = time.perf_counter()
        reply.tool_calls = [calls[i] for i in sorted(calls)]
        if reply.ok and not stopped:
            reply.status, reply.error = ERROR, "stream ended before messageStop"

    def _event(self, event: dict[str, Any], reply: Reply, calls: dict[int, dict[str, Any]],
               now: float) -> bool:
        """Apply one ConverseStream event; True when it ends the stream with an error."""
        if "contentBlockStart" in event:
            start = shapes.obj(event["contentBlockStart"], "contentBlockStart")
            use = shapes.obj(shapes.obj(start.get("start"), "contentBlockStart.start")
                             .get("toolUse"), "contentBlockStart.start.toolUse")
            if use:
                where = "contentBlockStart.start.toolUse"
                calls[shapes.index(start.get("contentBlockIndex"), "contentBlockIndex")] = {
                    "id": shapes.optional_text(use.get("toolUseId"), f"{where}.toolUseId"),
                    "name": shapes.optional_text(use.get("name"), f"{where}.name"),
                    "arguments": ""}
                self._content(reply, now)
        elif "contentBlockDelta" in event:
            block = shapes.obj(event["contentBlockDelta"], "contentBlockDelta")
            delta = shapes.obj(block.get("delta"), "contentBlockDelta.delta")
            text = shapes.text(delta.get("text"), "delta.text")
            reasoning = shapes.text(shapes.obj(delta.get("reasoningContent"),
                                               "delta.reasoningContent").get("text"),
                                    "delta.reasoningContent.text")
            tool_input = shapes.text(shapes.obj(delta.get("toolUse"), "delta.toolUse")
                                     .get("input"), "delta.toolUse.input")
            if text or reasoning or tool_input:
                self._content(reply, now)
            reply.text += text
            reply.reasoning += reasoning
            if tool_input:
                slot = calls.setdefault(shapes.index(block.get("contentBlockIndex"),
                                                     "contentBlockIndex"),
                                        {"id": None, "name": None, "arguments": ""})
                slot["arguments"] += tool_input
        elif "messageStop" in event:
            reply.finish_reason = shapes.optional_text(
                shapes.obj(event["messageStop"], "messageStop").get("stopReason"),
                "messageStop.stopReason")
        elif "metadata" in event:
            self._usage(reply, shapes.obj(event["metadata"], "metadata").get("usage"),
                        "metadata.usage")
        elif "messageStart" not in event and "contentBlockStop" not in event:
            # An error member botocore did not raise (it raises the modelled ones).
            name, detail = next(iter(event.items()), ("empty event", ""))
            reply.status = THROTTLED if "throttl" in str(name).lower() else ERROR
            reply.error = f"{name}: {detail}"[:300]
            return True
        return False

    @staticmethod
    def _content(reply: Reply, now: float) -> None:
        if reply.first_s is None:
            reply.first_s = now
        reply.chunk_s.append(now)
