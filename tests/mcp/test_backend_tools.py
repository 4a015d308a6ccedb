"""query_backend and model_health against the loopback server (and a stubbed SageMaker
runtime), through an in-process MCP client session."""

from __future__ import annotations

import io
import json

import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY

from benchstack_mcp.config import Config
from runners.backends.reply import BackendClient, Reply
from runners.measure import health
from runners.providers.sagemaker import names
from tests.mcp.client import call, error_text
from tests.mcp.sessions import StubbedSession
from tests.runners.conftest import write_openai_experiment
from tests.runners.watchdog_fixtures import aws  # noqa: F401 - a pytest fixture


@pytest.fixture
def config(tmp_path) -> Config:
    return Config(experiments_dir=tmp_path)


def test_query_sends_one_prompt_and_returns_the_reply(config, loopback, tmp_path):
    server = loopback()
    write_openai_experiment(tmp_path, server.base_url)
    result = call(config, "query_backend", {"experiment_name": "loop-test",
                                            "prompt": "What is 12 * 12?",
                                            "system": "Be brief.", "max_tokens": 8})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["status"] == "ok" and out["text"] == "144" and out["http_status"] == 200
    (body,) = server.bodies
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "What is 12 * 12?"}]
    assert body["max_tokens"] == 8


def test_a_failed_request_is_an_answer_not_a_crash(config, loopback, tmp_path):
    server = loopback(faults=["http500"])
    write_openai_experiment(tmp_path, server.base_url)
    out = call(config, "query_backend", {"experiment_name": "loop-test",
                                         "prompt": "hi"}).structured_content
    assert out["status"] == "error" and out["http_status"] == 500


def test_health_is_a_right_answer_not_only_http_200(config, loopback, tmp_path):
    server = loopback(faults=[None, "degenerate", "http500"])
    write_openai_experiment(tmp_path, server.base_url)
    args = {"experiment_name": "loop-test"}
    good = call(config, "model_health", args).structured_content
    assert good["healthy"] is True and good["problem"] is None
    assert good["prompt"] == server.bodies[0]["messages"][-1]["content"]
    looped = call(config, "model_health", args).structured_content
    assert looped["healthy"] is False and looped["http_status"] == 200
    assert looped["problem"].startswith("degenerate reply: repeated-token loop")
    failed = call(config, "model_health", args).structured_content
    assert failed["healthy"] is False and failed["problem"].startswith("request error")


class _Answers(BackendClient):
    def __init__(self, text: str):
        self.text = text

    def chat(self, ask, intended_s=None):
        return Reply(text=self.text, http_status=200, finish_reason="stop")


def test_a_wrong_answer_is_unhealthy():
    question = health.quality_suite.questions()[0]
    found = health.check(_Answers("I think it is 7."), question)
    assert found["healthy"] is False
    assert found["problem"] == f"wrong answer: expected a match for {question.pattern!r}"


def test_a_sagemaker_endpoint_is_reached_by_name_and_region(aws):
    session = StubbedSession({"sagemaker-runtime": "us-west-2"})
    payload = {"choices": [{"message": {"role": "assistant", "content": "hello"},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    raw = json.dumps(payload).encode()
    session.stubbers["sagemaker-runtime"].add_response(
        "invoke_endpoint", {"Body": StreamingBody(io.BytesIO(raw), len(raw)),
                            "ContentType": "application/json"},
        {"EndpointName": "bench-ep", "ContentType": "application/json",
         "Accept": "application/json", "Body": ANY})
    config = Config(session_factory=lambda: session)  # the repo's experiments
    out = call(config, "query_backend", {"experiment_name": "e2b-bf16-ml-g6", "prompt": "hi",
                                         "endpoint_name": "bench-ep",
                                         "region": "us-west-2"}).structured_content
    assert out["text"] == "hello" and out["completion_tokens"] == 1
    session.assert_no_pending_responses()
    unnamed = call(config, "query_backend", {"experiment_name": "e2b-bf16-ml-g6",
                                             "prompt": "hi"})
    assert error_text(unnamed).endswith("e2b-bf16-ml-g6: backend 'sagemaker' needs "
                                        "endpoint_name or the run_id that made it (and region)")


def test_a_run_id_names_the_endpoint_its_run_created(aws):
    session = StubbedSession({"sagemaker-runtime": "us-east-2"})
    raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Canberra"},
                                   "finish_reason": "stop"}]}).encode()
    session.stubbers["sagemaker-runtime"].add_response(
        "invoke_endpoint", {"Body": StreamingBody(io.BytesIO(raw), len(raw))},
        {"EndpointName": names.endpoint_name("e2b-bf16-ml-g6", "20261203T001500Z-ab12cd"),
         "ContentType": "application/json", "Accept": "application/json", "Body": ANY})
    out = call(Config(session_factory=lambda: session), "query_backend", {
        "experiment_name": "e2b-bf16-ml-g6", "prompt": "What is the capital of Australia?",
        "run_id": "20261203T001500Z-ab12cd"}).structured_content  # region: the first
    assert out["text"] == "Canberra"
    session.assert_no_pending_responses()
