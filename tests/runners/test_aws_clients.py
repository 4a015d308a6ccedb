"""Bedrock Converse[Stream] and SageMaker InvokeEndpoint[WithResponseStream] clients:
Stubber for the plain calls, real event-stream bytes through botocore for the streams."""

import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from runners.backends.bedrock_converse import BedrockConverseClient, to_converse
from runners.backends.reply import ERROR, OK, THROTTLED, Ask
from runners.backends.sagemaker_runtime import SageMakerRuntimeClient
from runners.measure.toolcall_check import TOOL
from tests.runners.aws_eventstream import event, exception, serve

EVENTSTREAM = "application/vnd.amazon.eventstream"


def aws(service):
    return boto3.client(service, region_name="us-east-2", aws_access_key_id="test",
                        aws_secret_access_key="test")


def ask(stream=False, **kw):
    return Ask([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
               max_tokens=16, stream=stream, **kw)


# ---------------------------------------------------------------- Bedrock


def test_converse_text_and_usage():
    runtime = aws("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [{"text": "Canberra"}]}},
            "stopReason": "end_turn", "usage": {"inputTokens": 9, "outputTokens": 3,
                                                "totalTokens": 12},
            "metrics": {"latencyMs": 80}},
            {"modelId": "us.amazon.nova-micro-v1:0", "system": [{"text": "be brief"}],
             "messages": [{"role": "user", "content": [{"text": "hi"}]}],
             "inferenceConfig": {"maxTokens": 16, "temperature": 0.0}})
        reply = BedrockConverseClient(runtime, "us.amazon.nova-micro-v1:0").chat(ask())
    assert reply.status == OK and reply.text == "Canberra"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.usage_source) == (9, 3, "server")


def test_converse_throttle_is_counted_apart():
    runtime = aws("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        stub.add_client_error("converse", "ValidationException", "bad model", 400)
        client = BedrockConverseClient(runtime, "m")
        assert client.chat(ask()).status == THROTTLED
        assert client.chat(ask()).status == ERROR


def test_converse_stream_ttft_skips_message_start_and_keeps_usage():
    runtime = aws("bedrock-runtime")
    serve(runtime, "ConverseStream", [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Can"}}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "berra"}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", {"usage": {"inputTokens": 9, "outputTokens": 2, "totalTokens": 11},
                           "metrics": {"latencyMs": 50}}),
    ], EVENTSTREAM)
    reply = BedrockConverseClient(runtime, "m").chat(ask(stream=True))
    assert reply.status == OK and reply.text == "Canberra" and len(reply.chunk_s) == 2
    assert reply.first_s == reply.chunk_s[0] and reply.completion_tokens == 2
    assert reply.finish_reason == "end_turn"


def test_converse_stream_tool_use_and_reasoning_count_as_content():
    runtime = aws("bedrock-runtime")
    serve(runtime, "ConverseStream", [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0,
                                    "delta": {"reasoningContent": {"text": "think"}}}),
        event("contentBlockStart", {"contentBlockIndex": 1, "start": {
            "toolUse": {"toolUseId": "t1", "name": "count_ids"}}}),
        event("contentBlockDelta", {"contentBlockIndex": 1,
                                    "delta": {"toolUse": {"input": '{"op": ">=", '}}}),
        event("contentBlockDelta", {"contentBlockIndex": 1,
                                    "delta": {"toolUse": {"input": '"value": 10}'}}}),
        event("messageStop", {"stopReason": "tool_use"}),
    ], EVENTSTREAM)
    reply = BedrockConverseClient(runtime, "m").chat(ask(stream=True, tools=[TOOL]))
    assert reply.ok and reply.reasoning == "think" and reply.usage_source == "missing"
    assert reply.tool_calls == [{"id": "t1", "name": "count_ids",
                                 "arguments": '{"op": ">=", "value": 10}'}]
    assert len(reply.chunk_s) == 4


def test_converse_stream_exception_midway():
    runtime = aws("bedrock-runtime")
    serve(runtime, "ConverseStream", [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Can"}}),
        exception("throttlingException", "slow down"),
    ], EVENTSTREAM)
    reply = BedrockConverseClient(runtime, "m").chat(ask(stream=True))
    assert reply.status == THROTTLED and reply.text == "Can"


def test_openai_tool_messages_translate_to_converse():
    system, messages = to_converse([
        {"role": "user", "content": "count"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function",
             "function": {"name": "count_ids", "arguments": '{"op": ">=", "value": 10}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": '{"count": 8}'},
    ])
    assert system == []
    assert messages[1] == {"role": "assistant", "content": [{"toolUse": {
        "toolUseId": "a", "name": "count_ids", "input": {"op": ">=", "value": 10}}}]}
    assert messages[2]["content"][0]["toolResult"]["content"] == [{"text": '{"count": 8}'}]


# ---------------------------------------------------------------- SageMaker runtime


def _body(obj) -> StreamingBody:
    raw = json.dumps(obj).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_invoke_endpoint_parses_the_vllm_body():
    runtime = aws("sagemaker-runtime")
    with Stubber(runtime) as stub:
        stub.add_response("invoke_endpoint", {"Body": _body({
            "choices": [{"message": {"role": "assistant", "content": "1512"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2}}),
            "ContentType": "application/json"},
            {"EndpointName": "ep", "ContentType": "application/json",
             "Accept": "application/json", "Body": ANY})
        reply = SageMakerRuntimeClient(runtime, "ep", "gemma").chat(ask(force_tokens=True))
    assert reply.ok and reply.text == "1512" and reply.completion_tokens == 2


def test_invoke_endpoint_model_error_429_is_a_throttle():
    runtime = aws("sagemaker-runtime")
    with Stubber(runtime) as stub:
        stub.add_client_error("invoke_endpoint", "ModelError", "busy", 424,
                              modeled_fields={"OriginalStatusCode": 429})
        stub.add_client_error("invoke_endpoint", "ModelError", "boom", 424,
                              modeled_fields={"OriginalStatusCode": 500})
        client = SageMakerRuntimeClient(runtime, "ep", "gemma")
        first, second = client.chat(ask()), client.chat(ask())
    assert first.status == THROTTLED and second.status == ERROR


def test_response_stream_reassembles_sse_split_across_parts():
    runtime = aws("sagemaker-runtime")
    sse = (b'data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n'
           b'data: {"choices":[{"delta":{"content":"15"}}]}\n\n'
           b'data: {"choices":[{"delta":{"content":"12"},"finish_reason":"stop"}]}\n\n'
           b'data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":2}}\n\n'
           b"data: [DONE]\n\n")
    parts = [sse[i:i + 23] for i in range(0, len(sse), 23)]  # lines cut mid-way
    serve(runtime, "InvokeEndpointWithResponseStream",
          [event("PayloadPart", p) for p in parts], EVENTSTREAM)
    reply = SageMakerRuntimeClient(runtime, "ep", "gemma").chat(ask(stream=True))
    assert reply.ok and reply.text == "1512" and reply.completion_tokens == 2
    assert len(reply.chunk_s) == 2 and reply.finish_reason == "stop"


def test_response_stream_cut_before_done_is_an_error():
    runtime = aws("sagemaker-runtime")
    serve(runtime, "InvokeEndpointWithResponseStream", [
        event("PayloadPart", b'data: {"choices":[{"delta":{"content":"15"}}]}\n\n')],
        EVENTSTREAM)
    reply = SageMakerRuntimeClient(runtime, "ep", "gemma").chat(ask(stream=True))
    assert reply.status == ERROR and "before [DONE]" in reply.error and reply.text == "15"


def test_response_stream_model_stream_error():
    runtime = aws("sagemaker-runtime")
    serve(runtime, "InvokeEndpointWithResponseStream", [
        event("PayloadPart", b'data: {"choices":[{"delta":{"content":"15"}}]}\n\n'),
        exception("ModelStreamError", "container died")], EVENTSTREAM)
    reply = SageMakerRuntimeClient(runtime, "ep", "gemma").chat(ask(stream=True))
    assert reply.status == ERROR and "ModelStreamError" in reply.error
