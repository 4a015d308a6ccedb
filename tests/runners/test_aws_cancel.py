"""Cancelling a SageMaker stream in flight: a real boto3 client against a loopback server
that sends one event and then holds the connection open, as a stalled endpoint would."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from botocore.config import Config

from runners.backends import cancel
from runners.backends.reply import ERROR, Ask
from runners.backends.sagemaker_runtime import SageMakerRuntimeClient
from tests.runners.aws_eventstream import event


class Stalling(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        frame = event("PayloadPart", b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n')
        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.flush()
        try:
            for _ in range(300):  # then nothing, for 30 s, unless the client hangs up
                time.sleep(0.1)
                self.wfile.write(b"")
        except OSError:
            pass


@pytest.fixture
def stalled_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_cancel_wakes_a_sagemaker_stream_blocked_in_a_read(stalled_endpoint):
    runtime = boto3.client("sagemaker-runtime", region_name="us-east-1",
                           endpoint_url=stalled_endpoint, aws_access_key_id="test",
                           aws_secret_access_key="test",
                           config=Config(read_timeout=60, retries={"total_max_attempts": 1}))
    client = SageMakerRuntimeClient(runtime, "endpoint", "m")
    replies = []
    worker = threading.Thread(target=lambda: replies.append(client.chat(
        Ask([{"role": "user", "content": "go"}], 64, stream=True))))
    cancel.reset()
    worker.start()
    time.sleep(1.0)  # the first event arrived; the read for the next one blocks
    assert worker.is_alive()
    started = time.monotonic()
    try:
        cancel.cancel("SIGTERM")
        worker.join(5)
    finally:
        cancel.reset()
    assert not worker.is_alive() and time.monotonic() - started < 1.0
    reply, = replies
    assert reply.status == ERROR and reply.error.startswith("cancelled: SIGTERM")
    assert reply.text == "hi"  # what arrived before the cancel is kept
