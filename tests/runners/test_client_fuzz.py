"""Fuzz: every client, fed random and truncated replies, returns one recordable Reply.

A reply of the wrong shape must end as a failed request with its reason, never as an
exception in a phase (issue 15). The strategies mix the APIs' own field names with random
values, so they reach deep into the parsers, and cut streams and bodies at any byte.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from benchmarks.loopback_server import LoopbackServer, Raw, Truth
from runners.backends.bedrock_converse import BedrockConverseClient
from runners.backends.openai_http import OpenAIHTTPClient
from runners.backends.reply import OK, Ask
from runners.backends.sagemaker_runtime import SageMakerRuntimeClient

OPENAI_KEYS = ["choices", "delta", "message", "content", "reasoning_content", "reasoning",
               "tool_calls", "function", "name", "arguments", "index", "id", "usage",
               "completion_tokens", "prompt_tokens", "finish_reason", "error"]
BEDROCK_KEYS = ["output", "message", "content", "text", "toolUse", "toolUseId", "name",
                "input", "reasoningContent", "reasoningText", "stopReason", "usage",
                "outputTokens", "inputTokens", "contentBlockStart", "start",
                "contentBlockIndex", "contentBlockDelta", "delta", "messageStop", "metadata",
                "messageStart", "contentBlockStop", "throttlingException"]
# What only the never-raise safety net would report: a parser that missed a shape.
UNCHECKED = re.compile(r"^(TypeError|AttributeError|KeyError|IndexError|RecursionError)\b")
FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

LEAVES = (st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats() |
          st.text(max_size=8) | st.sampled_from(["stop", "length", "x", ""]))
# Leaves the parsers take: strings, counts and absences, so a stream goes on past them.
GOOD = st.none() | st.text(max_size=6) | st.integers(0, 99)


def values(keys: list[str]):
    return st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(keys) | st.text(max_size=4), inner, max_size=4), max_leaves=12)


def mostly(good, bad):
    """`good` three times in four. (`a | b` flattens nested choices into equal shares, which
    would drown a well-formed branch among the random leaves.)"""
    return st.integers(0, 3).flatmap(lambda i: good if i else bad)


def openai_event():
    """Mostly well-formed chunks with random leaves, some entirely random values."""
    v = mostly(GOOD, values(OPENAI_KEYS))
    function = mostly(st.fixed_dictionaries({}, optional={"name": v, "arguments": v}), v)
    call = st.fixed_dictionaries({}, optional={"index": v, "id": v, "function": function})
    delta = st.fixed_dictionaries({}, optional={"content": v, "reasoning_content": v,
                                                "reasoning": v,
                                                "tool_calls": mostly(st.lists(call, max_size=2),
                                                                     v)})
    choice = mostly(st.fixed_dictionaries({"delta": delta}, optional={
        "finish_reason": v, "message": delta}), v)
    usage = st.fixed_dictionaries({}, optional={"completion_tokens": v, "prompt_tokens": v})
    return mostly(st.fixed_dictionaries({"choices": mostly(st.lists(choice, min_size=1,
                                                                    max_size=2), v)},
                                        optional={"usage": mostly(usage, v)}),
                  values(OPENAI_KEYS))


def encode(value) -> bytes:
    return json.dumps(value).encode()


@st.composite
def sse_streams(draw) -> bytes:
    events = draw(st.lists(mostly(openai_event().map(encode), st.binary(max_size=20)),
                           max_size=6))
    stream = b"".join(b"data: " + e + b"\n\n" for e in events)
    if draw(st.booleans()):
        stream += b"data: [DONE]\n\n"
    cut = draw(st.integers(0, len(stream)))
    return stream[:cut] if draw(st.booleans()) else stream


@st.composite
def bodies(draw) -> bytes:
    body = draw(mostly(openai_event().map(encode), st.binary(max_size=40)))
    return body[:draw(st.integers(0, len(body)))] if draw(st.booleans()) else body


def assert_recorded(reply) -> None:
    line = json.dumps(reply.record("fuzz"), allow_nan=False)  # requests.jsonl stays JSON
    assert json.loads(line)["status"] == reply.status
    if reply.ok:
        assert isinstance(reply.text, str) and isinstance(reply.reasoning, str)
        assert reply.completion_tokens is None or type(reply.completion_tokens) is int
        assert all(isinstance(c["arguments"], str) for c in reply.tool_calls)
    else:
        assert reply.error and not UNCHECKED.match(reply.error), reply.error
    assert reply.last_s >= reply.send_s


@pytest.fixture(scope="module")
def raw_server():
    with LoopbackServer(Truth()) as server:
        yield server


def ask(stream: bool) -> Ask:
    return Ask([{"role": "user", "content": "go"}], 8, stream=stream, deadline_s=5.0)


@FUZZ
@given(data=sse_streams())
def test_http_client_survives_any_stream(raw_server, data):
    client = OpenAIHTTPClient(raw_server.base_url, "m")
    raw_server.faults.append(Raw(data))
    assert_recorded(client.chat(ask(True)))
    client.close()


@FUZZ
@given(data=bodies(), status=st.sampled_from([200, 200, 200, 429, 500]))
def test_http_client_survives_any_body(raw_server, data, status):
    client = OpenAIHTTPClient(raw_server.base_url, "m")
    raw_server.faults.append(Raw(data, status=status, chunked=False))
    reply = client.chat(ask(False))
    assert_recorded(reply)
    assert reply.http_status == status
    client.close()


class SageMakerStub:
    def __init__(self, body: bytes, events: list):
        self.body, self.events = body, events

    def invoke_endpoint(self, **_):
        return {"Body": io.BytesIO(self.body)}

    def invoke_endpoint_with_response_stream(self, **_):
        return {"Body": iter(self.events)}


@st.composite
def sagemaker_events(draw) -> list:
    data = draw(sse_streams())
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=4)))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    events = [{"PayloadPart": {"Bytes": p}} for p in pieces]
    if draw(st.booleans()):
        events.insert(draw(st.integers(0, len(events))), draw(values(["PayloadPart", "Bytes",
                                                                      "ModelStreamError"])))
    return events


@FUZZ
@given(body=bodies(), events=sagemaker_events(), stream=st.booleans())
def test_sagemaker_client_survives_any_reply(body, events, stream):
    client = SageMakerRuntimeClient(SageMakerStub(body, events), "endpoint", "m")
    assert_recorded(client.chat(ask(stream)))


class BedrockStub:
    def __init__(self, message, events):
        self.message, self.events = message, events

    def converse(self, **_):
        return self.message

    def converse_stream(self, **_):
        return {"stream": iter(self.events) if isinstance(self.events, list) else self.events}


def bedrock_event():
    v = mostly(GOOD, values(BEDROCK_KEYS))
    delta = st.fixed_dictionaries({}, optional={
        "text": v, "reasoningContent": mostly(st.fixed_dictionaries({"text": v}), v),
        "toolUse": mostly(st.fixed_dictionaries({"input": v}), v)})
    start = st.fixed_dictionaries({"start": mostly(st.fixed_dictionaries({"toolUse": mostly(
        st.fixed_dictionaries({}, optional={"toolUseId": v, "name": v}), v)}), v)},
        optional={"contentBlockIndex": v})
    usage = st.fixed_dictionaries({}, optional={"outputTokens": v, "inputTokens": v})
    event = st.one_of(
        st.fixed_dictionaries({"contentBlockDelta": mostly(st.fixed_dictionaries(
            {"delta": delta}, optional={"contentBlockIndex": v}), v)}),
        st.fixed_dictionaries({"contentBlockStart": mostly(start, v)}),
        st.fixed_dictionaries({"messageStop": mostly(st.fixed_dictionaries({"stopReason": v}),
                                                     v)}),
        st.fixed_dictionaries({"metadata": mostly(st.fixed_dictionaries({"usage": usage}), v)}),
        st.just({"messageStart": {"role": "assistant"}}))
    return mostly(event, values(BEDROCK_KEYS))


def bedrock_message():
    v = mostly(GOOD, values(BEDROCK_KEYS))
    block = st.fixed_dictionaries({}, optional={
        "text": v, "toolUse": mostly(st.fixed_dictionaries({}, optional={
            "toolUseId": v, "name": v, "input": v}), v),
        "reasoningContent": mostly(st.fixed_dictionaries({"reasoningText": mostly(
            st.fixed_dictionaries({"text": v}), v)}), v)})
    message = st.fixed_dictionaries({"content": mostly(st.lists(block, max_size=3), v)})
    return mostly(st.fixed_dictionaries(
        {"output": mostly(st.fixed_dictionaries({"message": mostly(message, v)}), v)},
        optional={"stopReason": v, "usage": mostly(st.fixed_dictionaries({}, optional={
            "outputTokens": v, "inputTokens": v}), v)}), values(BEDROCK_KEYS))


@FUZZ
@given(message=bedrock_message(), events=st.lists(bedrock_event(), max_size=6),
       stream=st.booleans())
def test_bedrock_client_survives_any_reply(message, events, stream):
    client = BedrockConverseClient(BedrockStub(message, events), "model")
    assert_recorded(client.chat(ask(stream)))


@pytest.mark.parametrize("fault,reason", [
    ("bad_sse", "bad reply: SSE event is not an object: None"),
    ("list_body", "bad reply: SSE event is not an object: []"),
    ("bad_usage", "bad reply: usage.completion_tokens is not a token count: 'lots'"),
])
def test_hostile_streams_fail_with_their_reason(loopback, fault, reason):
    client = OpenAIHTTPClient(loopback(faults=[fault]).base_url, "m")
    reply = client.chat(Ask([{"role": "user", "content": "go"}], 8, stream=True))
    assert reply.status != OK and reply.error == reason
    assert client.chat(Ask([{"role": "user", "content": "go"}], 4, stream=True)).ok


def test_a_list_body_fails_with_its_reason(loopback):
    client = OpenAIHTTPClient(loopback(faults=["list_body"]).base_url, "m")
    reply = client.chat(Ask([{"role": "user", "content": "go"}], 8))
    assert reply.error == "bad reply: response body is not an object: [{'choices': []}]"
