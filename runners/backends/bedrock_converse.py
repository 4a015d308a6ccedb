"""Bedrock client: Converse and ConverseStream.

Requests arrive in OpenAI message format and are translated here. Bedrock has no way to
force a reply length, so `force_tokens` is not honoured; the decode phase then reports
its token counts as unverified instead of pretending.
"""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends import aws_errors
from runners.backends.reply import ERROR, THROTTLED, Ask, BackendClient, Reply


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

    def chat(self, ask: Ask, intended_s: float | None = None) -> Reply:
        reply = Reply(intended_s=intended_s)
        reply.send_s = time.perf_counter()
        try:
            if ask.stream:
                self._stream(self.runtime.converse_stream(**self._kwargs(ask)), reply)
            else:
                resp = self.runtime.converse(**self._kwargs(ask))
                reply.last_s = reply.first_s = time.perf_counter()
                reply.chunk_s = [reply.last_s]
                self._message(resp, reply)
            reply.http_status = 200
        except Exception as exc:  # botocore raises many unrelated classes; sort them by shape
            reply.status, reply.error = aws_errors.classify(exc)
        if reply.last_s is None:
            reply.last_s = time.perf_counter()
        return reply

    @staticmethod
    def _usage(reply: Reply, usage: dict[str, Any] | None) -> None:
        if usage and usage.get("outputTokens") is not None:
            reply.prompt_tokens = usage.get("inputTokens")
            reply.completion_tokens = usage["outputTokens"]
            reply.usage_source = "server"

    def _message(self, resp: dict[str, Any], reply: Reply) -> None:
        for block in ((resp.get("output") or {}).get("message") or {}).get("content") or []:
            if "text" in block:
                reply.text += block["text"]
            elif "toolUse" in block:
                use = block["toolUse"]
                reply.tool_calls.append({"id": use.get("toolUseId"), "name": use.get("name"),
                                         "arguments": json.dumps(use.get("input") or {})})
            elif "reasoningContent" in block:
                reply.reasoning += (block["reasoningContent"].get("reasoningText") or {}).get(
                    "text", "")
        reply.finish_reason = resp.get("stopReason")
        self._usage(reply, resp.get("usage"))

    def _stream(self, resp: dict[str, Any], reply: Reply) -> None:
        calls: dict[int, dict[str, Any]] = {}
        stopped = False
        for event in resp["stream"]:
            now = time.perf_counter()
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                use = (start.get("start") or {}).get("toolUse")
                if use:
                    calls[start.get("contentBlockIndex", 0)] = {
                        "id": use.get("toolUseId"), "name": use.get("name"), "arguments": ""}
                    self._content(reply, now)
            elif "contentBlockDelta" in event:
                block = event["contentBlockDelta"]
                delta = block.get("delta") or {}
                text = delta.get("text") or ""
                reasoning = (delta.get("reasoningContent") or {}).get("text") or ""
                tool_input = (delta.get("toolUse") or {}).get("input") or ""
                if text or reasoning or tool_input:
                    self._content(reply, now)
                reply.text += text
                reply.reasoning += reasoning
                if tool_input:
                    calls.setdefault(block.get("contentBlockIndex", 0),
                                     {"id": None, "name": None, "arguments": ""})
                    calls[block.get("contentBlockIndex", 0)]["arguments"] += tool_input
            elif "messageStop" in event:
                reply.finish_reason = event["messageStop"].get("stopReason")
                stopped = True
            elif "metadata" in event:
                self._usage(reply, event["metadata"].get("usage"))
            elif "messageStart" not in event and "contentBlockStop" not in event:
                # An error member botocore did not raise (it raises the modelled ones).
                name, detail = next(iter(event.items()))
                reply.status = THROTTLED if "throttl" in name.lower() else ERROR
                reply.error = f"{name}: {detail}"[:300]
                break
        reply.last_s = time.perf_counter()
        reply.tool_calls = [calls[i] for i in sorted(calls)]
        if reply.ok and not stopped:
            reply.status, reply.error = ERROR, "stream ended before messageStop"

    @staticmethod
    def _content(reply: Reply, now: float) -> None:
        if reply.first_s is None:
            reply.first_s = now
        reply.chunk_s.append(now)
