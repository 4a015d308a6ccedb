"""SageMaker runtime client: InvokeEndpoint and InvokeEndpointWithResponseStream against
the vLLM container, whose body is the OpenAI chat-completions JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends import aws_errors, openai_chat
from runners.backends.reply import ERROR, Ask, BackendClient, Reply


class SageMakerRuntimeClient(BackendClient):
    name = "sagemaker-runtime"

    def __init__(self, runtime, endpoint_name: str, model: str, *, supports_tools: bool = False,
                 force_fields: dict[str, Any] | None = None):
        self.runtime = runtime  # boto3.client("sagemaker-runtime"); its pool is reused
        self.endpoint_name, self.model = endpoint_name, model
        self.supports_tools = supports_tools
        self.force_fields = openai_chat.VLLM_FORCE_FIELDS if force_fields is None else force_fields

    def chat(self, ask: Ask, intended_s: float | None = None) -> Reply:
        body = json.dumps(openai_chat.request_body(ask, self.model, self.force_fields))
        reply = Reply(intended_s=intended_s)
        reply.send_s = time.perf_counter()
        try:
            if ask.stream:
                self._stream(body, reply)
            else:
                resp = self.runtime.invoke_endpoint(
                    EndpointName=self.endpoint_name, ContentType="application/json",
                    Accept="application/json", Body=body)
                payload = json.loads(resp["Body"].read())
                reply.last_s = reply.first_s = time.perf_counter()
                reply.chunk_s = [reply.last_s]
                reply.http_status = 200
                openai_chat.parse_completion(reply, payload)
        except ValueError as exc:
            reply.status, reply.error = ERROR, f"bad response body: {exc}"
        except Exception as exc:  # botocore raises many unrelated classes; sort them by shape
            reply.status, reply.error = aws_errors.classify(exc)
        if reply.last_s is None:
            reply.last_s = time.perf_counter()
        return reply

    def _stream(self, body: str, reply: Reply) -> None:
        resp = self.runtime.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json",
            Accept="text/event-stream", Body=body)
        reply.http_status = 200
        assembler = openai_chat.StreamAssembler(reply)
        for event in resp["Body"]:
            part = event.get("PayloadPart")
            if part is not None:
                assembler.feed(part.get("Bytes", b""), time.perf_counter())
                continue
            # ModelStreamError / InternalStreamFailure arrive as events when not raised.
            name, detail = next(iter(event.items()))
            reply.status, reply.error = ERROR, f"{name}: {detail}"[:300]
            break
        reply.last_s = time.perf_counter()
        assembler.finish()
        if reply.ok and not assembler.done:
            reply.status, reply.error = ERROR, "stream ended before [DONE]"
