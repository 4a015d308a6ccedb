"""The OpenAI HTTP client against the loopback server's programmed truth and faults."""

import pytest

from benchmarks.loopback_server import Truth
from runners.backends.openai_http import OpenAIHTTPClient
from runners.backends.reply import ERROR, OK, THROTTLED, TIMEOUT, Ask


def forced(n, stream=True):
    return Ask([{"role": "user", "content": "go"}], max_tokens=n, stream=stream,
               force_tokens=True)


def test_stream_times_match_the_programmed_truth(loopback):
    truth = Truth(ttft_s=0.05, gap_s=0.004)
    server = loopback(truth)
    client = OpenAIHTTPClient(server.base_url, "m")
    reply = client.chat(forced(40))
    assert reply.status == OK and reply.completion_tokens == 40
    assert reply.usage_source == "server"
    assert len(reply.chunk_s) == 40
    # The role-only chunk goes out at once; TTFT must wait for generated content.
    ttft = reply.first_s - reply.send_s
    assert truth.first_content_s() <= ttft < truth.first_content_s() + 0.04
    e2el = reply.last_s - reply.send_s
    assert truth.e2el_s(40) <= e2el < truth.e2el_s(40) + 0.06
    assert server.bodies[0]["ignore_eos"] is True and server.bodies[0]["min_tokens"] == 40


def test_chunks_of_several_tokens(loopback):
    truth = Truth(ttft_s=0.02, gap_s=0.002, tokens_per_chunk=4)
    client = OpenAIHTTPClient(loopback(truth).base_url, "m")
    reply = client.chat(forced(32))
    assert len(reply.chunk_s) == 8 and reply.completion_tokens == 32
    assert reply.first_s - reply.send_s >= truth.first_content_s()


def test_connections_are_reused(loopback):
    server = loopback()
    client = OpenAIHTTPClient(server.base_url, "m")
    for stream in (True, False, True):
        assert client.chat(forced(4, stream)).ok
    assert client.pool.idle.qsize() == 1  # one keep-alive connection served all three


def test_a_kept_alive_connection_the_server_closed_is_replaced_once(loopback):
    """uvicorn closes a connection idle for 5 s; the next request on it fails before the
    server sees it, so the client sends it once more on a new connection (a local run's
    open-loop level past capacity once lost 6 of 9 requests to BrokenPipe this way)."""
    import socket

    server = loopback()
    client = OpenAIHTTPClient(server.base_url, "m")
    assert client.chat(forced(4)).ok
    stale = client.pool.idle.queue[0]
    stale.sock.shutdown(socket.SHUT_RDWR)  # as the server's close leaves it for our send
    for stream in (True, False):
        reply = client.chat(forced(4, stream))
        assert reply.ok, reply.error
    assert len(server.bodies) == 3  # the stale connection carried nothing to the server


def test_a_new_connection_that_fails_is_an_error_not_a_retry(loopback):
    server = loopback(faults=["close"])
    client = OpenAIHTTPClient(server.base_url, "m")
    reply = client.chat(forced(4))
    assert reply.status == ERROR and len(server.bodies) == 1


def test_missing_usage_is_said(loopback):
    client = OpenAIHTTPClient(loopback(faults=["no_usage", "no_usage"]).base_url, "m")
    for stream in (True, False):
        reply = client.chat(forced(8, stream))
        assert reply.ok and reply.usage_source == "missing" and reply.completion_tokens is None


@pytest.mark.parametrize("fault,status", [("http500", ERROR), ("http429", THROTTLED)])
def test_http_errors_are_sorted(loopback, fault, status):
    client = OpenAIHTTPClient(loopback(faults=[fault]).base_url, "m")
    reply = client.chat(forced(8))
    assert reply.status == status and reply.http_status == int(fault[4:])
    assert client.chat(forced(8)).ok  # and the connection is still usable


def test_timeout(loopback):
    server = loopback(Truth(hang_s=1.0), faults=["hang"])
    reply = OpenAIHTTPClient(server.base_url, "m", timeout_s=0.2).chat(forced(8))
    assert reply.status == TIMEOUT


def test_stream_cut_midway_is_an_error(loopback):
    client = OpenAIHTTPClient(loopback(faults=["cut"]).base_url, "m")
    reply = client.chat(forced(20))
    assert reply.status == ERROR and "before [DONE]" in reply.error
    assert 0 < len(reply.chunk_s) < 20
    assert client.chat(forced(4)).ok  # a fresh connection replaces the cut one


def test_tool_call_chunk_counts_as_first_content(loopback):
    client = OpenAIHTTPClient(loopback().base_url, "m", supports_tools=True)
    reply = client.chat(Ask([{"role": "user", "content": "count"}], 64, stream=True,
                            tools=[{"type": "function", "function": {"name": "count_ids"}}]))
    assert reply.ok and reply.first_s is not None and reply.text == ""
    assert reply.tool_calls[0]["name"] == "count_ids"
    assert '"value": 10' in reply.tool_calls[0]["arguments"]


def test_connection_refused_is_an_error():
    reply = OpenAIHTTPClient("http://127.0.0.1:9", "m", timeout_s=1).chat(forced(4))
    assert reply.status == ERROR and "connect" in reply.error
