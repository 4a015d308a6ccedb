"""SageMaker runtime client: InvokeEndpoint and InvokeEndpointWithResponseStream against
the vLLM container, whose body is the OpenAI chat-completions JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from runners.backends import aws_errors, aws_runtime, cancel, openai_chat, shapes
from runners.backends.reply import ERROR, TIMEOUT, Ask, BackendClient, Reply
from runners.backends.shapes import BadReply


class SageMakerRuntimeClient(BackendClient):
    name = "sagemaker-runtime"

    def __init__(self, runtime, endpoint_name: str, model: str, *, supports_tools: bool = False,
                 force_fields: dict[str, Any] | None = None):
        self.runtime = runtime  # boto3.client("sagemaker-runtime"); its pool is reused
        self.endpoint_name, self.model = endpoint_name, model
        self.supports_tools = supports_tools
        self.force_fields = openai_chat.VLLM_FORCE_FIELDS if force_fields is None else force_fields

    def _exchange(self, ask: Ask, reply: Reply) -> None:
        body = json.dumps(openai_chat.request_body(ask, self.model, self.force_fields))
        end_s = reply.send_s + ask.whole_deadline_s()
        try:
            if ask.stream:
                self._stream(body, reply, end_s, ask.whole_deadline_s())
            else:
                resp = self.runtime.invoke_endpoint(
                    EndpointName=self.endpoint_name, ContentType="application/json",
                    Accept="application/json", Body=body)
                data = resp["Body"].read()
                reply.last_s = reply.first_s = time.perf_counter()
                reply.chunk_s = [reply.last_s]
                reply.http_status = 200
                try:
                    payload = json.loads(data)
                except ValueError:
                    raise BadReply(f"response body is not JSON: {data[:80]!r}") from None
                openai_chat.parse_completion(reply, payload)
        except BadReply:
            raise
        except Exception as exc:  # botocore raises many unrelated classes; sort them by shape
            reply.status, reply.error = aws_errors.classify(exc)

    def _stream(self, body: str, reply: Reply, end_s: float, deadline_s: float) -> None:
        resp = self.runtime.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json",
            Accept="text/event-stream", Body=body)
        reply.http_status = 200
        assembler = openai_chat.StreamAssembler(reply)
        stream = resp["Body"]
        # botocore offers no per-call deadline: it is checked between events, and a
        # cancelled run shuts the stream's socket.
        with cancel.in_flight(aws_runtime.stream_closer(stream)):
            for event in stream:
                if time.perf_counter() > end_s:
                    reply.status = TIMEOUT
                    reply.error = f"no complete reply within the {deadline_s:g} s request deadline"
                    break
                event = shapes.required_obj(event, "stream event")
                part = event.get("PayloadPart")
                if part is not None:
                    data = shapes.obj(part, "PayloadPart").get("Bytes", b"")
                    if not isinstance(data, bytes):
                        raise BadReply(f"PayloadPart.Bytes is not bytes: {data!r:.60}")
                    assembler.feed(data, time.perf_counter())
                    continue
                # ModelStreamError / InternalStreamFailure arrive as events when not raised.
                name, detail = next(iter(event.items()), ("empty event", ""))
                reply.status, reply.error = ERROR, f"{name}: {detail}"[:300]
                break
        reply.last_s = time.perf_counter()
        assembler.finish()
        if reply.ok and not assembler.done:
            reply.status, reply.error = ERROR, "stream ended before [DONE]"
