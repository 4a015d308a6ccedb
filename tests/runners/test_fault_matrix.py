"""The fault matrix (docs/benchmark.md, "Faults"): each fault a server, a store or the user
can throw, what the run records, its exit status and what is kept. Every row of the table
has a test here."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.loopback_server import Truth
from runners import cli
from runners.backends.openai_http import OpenAIHTTPClient
from runners.backends.reply import DEGENERATE, ERROR, OK, THROTTLED, TIMEOUT, Ask
from runners.measure.recorder import Recorder
from runners.results.store import LocalStore
from runners.workflow import driver
from tests.runners.conftest import benchmark_plan, write_openai_experiment

ROOT = Path(__file__).resolve().parents[2]


class Plan:
    request_deadline_s = None


class OneRun:
    """What a Recorder needs of a Run: a plan, a store and keys."""

    def __init__(self, folder: Path):
        self.plan, self.store = Plan(), LocalStore(folder)

    @staticmethod
    def key(name: str) -> str:
        return name


# fault -> (stream?, status, words in the error). Deadlines are short so hangs are quick.
REQUEST_FAULTS = {
    "http500": (True, ERROR, "HTTP 500"),
    "http429": (True, THROTTLED, "HTTP 429"),
    "hang": (True, TIMEOUT, "request deadline"),
    "cut": (True, ERROR, "stream ended before [DONE]"),
    "bad_sse": (True, ERROR, "bad reply: SSE event is not an object"),
    "no_done": (True, ERROR, "stream ended before [DONE]"),
    "list_body": (False, ERROR, "bad reply: response body is not an object"),
    "bad_usage": (False, ERROR, "usage.completion_tokens is not a token count"),
    "trickle": (True, TIMEOUT, "request deadline"),
    "close": (True, ERROR, "RemoteDisconnected"),
    "degenerate": (True, DEGENERATE, "repeat"),
}


@pytest.mark.parametrize("fault", REQUEST_FAULTS)
def test_each_request_fault_is_one_recorded_failure(loopback, tmp_path, fault):
    stream, status, words = REQUEST_FAULTS[fault]
    server = loopback(Truth(ttft_s=0.01, gap_s=0.001, hang_s=3.0, trickle_s=0.05),
                      faults=[fault])
    rec = Recorder(OneRun(tmp_path), "stream", OpenAIHTTPClient(server.base_url, "m"))
    started = time.monotonic()
    reply = rec.send(Ask([{"role": "user", "content": "go"}], 32, stream=stream,
                         force_tokens=True, deadline_s=0.6))
    assert time.monotonic() - started < 2.0  # the deadline holds, trickle or hang
    assert reply.status == status and words in reply.error, reply.error
    assert rec.send(Ask([{"role": "user", "content": "go"}], 4, stream=True)).status == OK
    rec.save()
    records = [json.loads(line) for line in
               (tmp_path / "requests/stream.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == [status, OK]
    assert words in records[0]["error"]


def small_plan(**changes) -> str:
    values = dict(decode_lengths=[2, 4], decode_repeats=1, stream_requests=2, stream_tokens=4,
                  concurrency=[2], load_tokens=4, load_batches=1, quality_suite="none",
                  toolcall_runs=0)
    return benchmark_plan(**{**values, **changes})


def test_every_request_failing_exits_3_with_one_line(loopback, tmp_path, capsys):
    exp = write_openai_experiment(tmp_path, loopback(faults=["http500"] * 100).base_url,
                                  tools=False, plan=small_plan())
    assert cli.main(["run", str(exp), "--store", str(tmp_path)]) == driver.EXIT_NOTHING_MEASURED
    err = capsys.readouterr().err.splitlines()
    reason = [line for line in err if line.startswith("exit 3: ")]
    assert reason == ["exit 3: no successful request in warmup (4 sent), decode (2 sent), "
                      "stream (2 sent), load (2 sent); first error: HTTP 500: "
                      '{"error": {"message": "programmed http500"}}']
    folder = next(tmp_path.glob("runs/*/*/"))
    records = (folder / "requests.jsonl").read_text().splitlines()
    assert len(records) == 10 and (folder / "report.md").exists()


def test_a_store_that_fails_mid_run_hands_the_run_to_a_local_folder(
        loopback, tmp_path, monkeypatch, capsys):
    """AccessDenied in the middle of a run: the run goes on in ./benchstack-fallback, which
    gets every file written before the failure too, and the report."""
    writes = {"n": 0}
    real_put = LocalStore.put_bytes

    def failing_put(self, key, data, content_type="application/octet-stream"):
        if str(self.root).endswith("primary"):
            writes["n"] += 1
            if writes["n"] > 3:  # probe, manifest, provision.json; then it fails
                raise PermissionError(13, "Access Denied")
        return real_put(self, key, data, content_type)

    monkeypatch.setattr(LocalStore, "put_bytes", failing_put)
    monkeypatch.chdir(tmp_path)
    exp = write_openai_experiment(tmp_path, loopback().base_url, tools=False, plan=small_plan())
    assert cli.main(["run", str(exp), "--store", str(tmp_path / "primary")]) == 0
    err = capsys.readouterr().err
    line = next(l for l in err.splitlines() if l.startswith("store "))
    assert "failed (PermissionError: [Errno 13] Access Denied); the run goes on in " in line
    assert line.endswith(str(tmp_path / "benchstack-fallback"))
    folder = next((tmp_path / "benchstack-fallback").glob("runs/*/*/"))
    for name in ("manifest.json", "provision.json", "decode.json", "teardown.json",
                 "summary.json", "report.md", "requests.jsonl"):
        assert (folder / name).exists(), name


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}
    return subprocess.run([sys.executable, "-m", "runners", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env={**environ, **(env or {})})


def test_a_store_that_takes_no_write_stops_the_run_before_anything(loopback, tmp_path):
    server = loopback()
    exp = write_openai_experiment(tmp_path, server.base_url, tools=False, plan=small_plan())
    (tmp_path / "a-file").write_text("not a folder")
    no_aws = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
              "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
              "AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    cases = [(str(tmp_path / "a-file"), {}, "cannot write and read back runs/"),
             ("s3://benchstack-no-such-bucket", no_aws, "cannot write and read back runs/"),
             ("s3://b", {**no_aws, "AWS_PROFILE": "no-such-profile"}, "cannot open an S3 "
              "client: ProfileNotFound")]
    for store, env, words in cases:
        done = run_cli("run", str(exp), "--store", store, env=env)
        assert done.returncode == 2, done.stderr
        line, = done.stderr.strip().splitlines()
        assert line.startswith(f"error: store {store}") and words in line, line
        assert line.endswith("; nothing was started") and "Traceback" not in done.stderr
    assert server.bodies == []  # not one request: nothing was placed or measured


def stuck_load(loopback):
    """A server that answers the 8 requests before the load phase, then holds the load
    phase's 4: two never answer, two trickle keep-alive comments, all within deadline."""
    return loopback(Truth(ttft_s=0.005, gap_s=0.001, hang_s=60.0, trickle_s=0.05),
                    faults=[None] * 8 + ["hang", "trickle"] * 2)


def start_run(exp: Path, store: Path) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "runners", "run", str(exp), "--store",
                             str(store)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen = []
    for line in proc.stderr:  # one line per phase when stderr is not a terminal
        seen.append(line)
        if " load " in line:
            break
    time.sleep(0.5)  # the four requests are in flight
    return proc, seen


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_cancels_in_flight_requests_and_tears_down_within_5_s(loopback, tmp_path,
                                                                       sig):
    server = stuck_load(loopback)
    exp = write_openai_experiment(tmp_path, server.base_url, tools=False,
                                  plan=small_plan(concurrency=[4]))
    proc, _ = start_run(exp, tmp_path)
    sent = time.monotonic()
    proc.send_signal(sig)
    rest = proc.stderr.read()
    code = proc.wait(30)
    took = time.monotonic() - sent
    assert code == 130, rest
    assert took < 5.0, f"{took:.1f} s from {sig.name} to exit"
    assert f"interrupted ({sig.name})" in rest and "Traceback" not in rest
    folder = next(tmp_path.glob("runs/*/*/"))
    assert json.loads((folder / "teardown.json").read_text())["state"] == "deleted"
    assert (folder / "summary.json").exists()
    load = [json.loads(l) for l in (folder / "requests/load.jsonl").read_text().splitlines()]
    assert len(load) == 4
    assert all(r["status"] == "error" and r["error"].startswith(f"cancelled: {sig.name}")
               for r in load)
    assert (folder / "decode.json").exists() and not (folder / "load.json").exists()


def test_a_kill_loses_only_the_requests_in_flight(loopback, tmp_path):
    """SIGKILL cannot be caught: the records of every finished request are on disk."""
    server = loopback(Truth(ttft_s=0.01, gap_s=0.02))
    exp = write_openai_experiment(tmp_path, server.base_url, tools=False, plan=small_plan(
        stream_requests=50, stream_tokens=20))
    proc = subprocess.Popen([sys.executable, "-m", "runners", "run", str(exp), "--store",
                             str(tmp_path)], stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        records = []
        while time.monotonic() < deadline:
            found = list(tmp_path.glob("runs/*/*/requests/stream.jsonl"))
            if found and len(records := found[0].read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait(10)
        kept = found[0].read_text().splitlines()
        assert len(kept) >= 3 and all(json.loads(l)["status"] == "ok" for l in kept)
        assert len(kept) < 50  # killed mid-phase, and what finished is kept
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_failed_teardown_exits_4_with_one_line(loopback, tmp_path, monkeypatch, capsys):
    from runners.providers.openai import OpenAIProvider

    monkeypatch.setattr(OpenAIProvider, "teardown", lambda self, placement: {
        "state": "retry-later", "message": "endpoint still Updating"})
    exp = write_openai_experiment(tmp_path, loopback().base_url, tools=False, plan=small_plan())
    outcome = driver.run_experiment(str(exp), str(tmp_path), context_overrides={
        "teardown_budget_s": 0.5})
    code, reason = driver.verdict(outcome)
    assert code == driver.EXIT_TEARDOWN_FAILED
    assert reason == ("teardown failed: retry-later; the resource may still be running and "
                      "billing")
    folder = next(tmp_path.glob("runs/*/*/"))
    assert json.loads((folder / "teardown.json").read_text())["state"] == "retry-later"
    assert (folder / "report.md").exists()


def test_the_experiments_request_deadline_reaches_every_request(loopback, tmp_path):
    server = loopback(Truth(hang_s=5.0), faults=["hang"])
    run = OneRun(tmp_path)
    run.plan.request_deadline_s = 1.0
    rec = Recorder(run, "decode", OpenAIHTTPClient(server.base_url, "m"))
    started = time.monotonic()
    reply = rec.send(Ask([{"role": "user", "content": "go"}], 512))
    assert 1.0 <= time.monotonic() - started < 1.8
    assert reply.status == TIMEOUT
    assert reply.error == "no complete reply within the 1 s request deadline"


def test_request_deadline_is_a_benchmark_field(tmp_path):
    from runners import experiment

    base = {"name": "xx", "backend": "local", "model": {
        "id": "m", "served_name": "m", "build": "b", "precision": "int4"}}
    assert experiment.parse(base, "x").benchmark.request_deadline_s is None
    plan = experiment.parse({**base, "benchmark": {"request_deadline_s": 90}}, "x").benchmark
    assert plan.request_deadline_s == 90.0
    for bad in (0.5, float("nan"), "soon"):
        with pytest.raises(experiment.ExperimentError, match="benchmark.request_deadline_s"):
            experiment.parse({**base, "benchmark": {"request_deadline_s": bad}}, "x")


def test_sighup_with_the_terminal_gone_still_tears_down(loopback, tmp_path):
    """The SSH session drops: the terminal closes (every write to it fails from then on)
    and SIGHUP arrives. The run must tear down and write its report all the same."""
    import pty

    server = stuck_load(loopback)
    exp = write_openai_experiment(tmp_path, server.base_url, tools=False,
                                  plan=small_plan(concurrency=[4]))
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "runners", "run", str(exp), "--store",
                             str(tmp_path)], stdin=slave, stdout=slave, stderr=slave,
                            cwd=ROOT, start_new_session=True)
    os.close(slave)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob(
                "runs/*/*/requests/stream.jsonl")):
            if select.select([master], [], [], 0.05)[0]:
                os.read(master, 65536)  # keep the terminal drained while it lives
            time.sleep(0.05)
        time.sleep(1.0)  # into the load phase, whose 4 requests the server holds
    finally:
        os.close(master)  # the terminal is gone
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(30) == 130
    folder = next(tmp_path.glob("runs/*/*/"))
    assert json.loads((folder / "teardown.json").read_text())["state"] == "deleted"
    assert (folder / "report.md").exists()
    load = [json.loads(l) for l in (folder / "requests/load.jsonl").read_text().splitlines()]
    assert load and all(r["error"].startswith("cancelled: SIGHUP") for r in load)


def test_a_host_that_takes_no_connection_costs_the_deadline_not_300_s(tmp_path):
    """A listening socket whose backlog is full drops SYNs, as a host that is gone would."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        rec = Recorder(OneRun(tmp_path), "decode", OpenAIHTTPClient(f"http://127.0.0.1:{port}",
                                                                     "m"))
        started = time.monotonic()
        reply = rec.send(Ask([{"role": "user", "content": "go"}], 8, deadline_s=1.0))
        assert time.monotonic() - started < 2.0
        assert reply.status == TIMEOUT
        assert reply.error == "connect: no connection within the 1 s deadline"
    finally:
        for sock in (listener, *fillers):
            sock.close()
