"""endpoint_log_lines against FilterLogEvents answers through botocore's Stubber."""

from __future__ import annotations

import pytest

from runners.telemetry import engine_log
from runners.telemetry.cloudwatch_logs import LogsUnavailable, endpoint_log_lines
from tests.telemetry.cloudwatch_fixtures import events_from_log, pages, stubbed

ENDPOINT = "bs-e2b-emb4-ml-g6-0123456789"
GROUP = f"/aws/sagemaker/Endpoints/{ENDPOINT}"


@pytest.fixture
def logs():
    with stubbed("logs") as pair:
        yield pair


def test_pages_are_followed_to_the_end_and_read_as_engine_facts(logs):
    client, stub = logs
    events = events_from_log()
    answers = pages(events, 8)
    token, read = None, 0
    for answer in answers:
        # each request asks only for what is left of max_lines (10,000)
        expected = {"logGroupName": GROUP, "startTime": 1760227000000, "limit": 10000 - read}
        if token:
            expected["nextToken"] = token
        stub.add_response("filter_log_events", answer, expected)
        token, read = answer.get("nextToken"), read + len(answer["events"])
    lines = endpoint_log_lines(client, ENDPOINT, start_ms=1760227000000)
    assert len(lines) == len(events)
    assert lines[0] == {"timestamp_ms": events[0]["timestamp"],
                        "stream": "AllTraffic/i-0a1b2c3d4e5f60718",
                        "message": events[0]["message"]}
    facts = engine_log.parse(lines, "engine log: CloudWatch")
    assert facts["kv_cache_tokens"] == 1_209_977 and facts["weights_gib"] == 2.86
    assert facts["first_ping_200_at"] == "2026-10-12T00:19:04.012Z"


def test_max_lines_caps_the_limit_and_stops_reading(logs):
    client, stub = logs
    events = events_from_log()
    stub.add_response("filter_log_events", {"events": events[:5], "nextToken": "more"},
                      {"logGroupName": GROUP, "startTime": 1, "endTime": 2, "limit": 5})
    lines = endpoint_log_lines(client, ENDPOINT, start_ms=1, end_ms=2, max_lines=5)
    assert len(lines) == 5


def test_a_missing_log_group_is_one_clear_error(logs):
    client, stub = logs
    stub.add_client_error("filter_log_events", "ResourceNotFoundException",
                          "The specified log group does not exist.")
    with pytest.raises(LogsUnavailable, match=f"log group {GROUP} does not exist"):
        endpoint_log_lines(client, ENDPOINT, start_ms=0)


def test_access_denied_names_the_action(logs):
    client, stub = logs
    stub.add_client_error("filter_log_events", "AccessDeniedException", "not authorized")
    with pytest.raises(LogsUnavailable, match="logs:FilterLogEvents"):
        endpoint_log_lines(client, ENDPOINT, start_ms=0)
