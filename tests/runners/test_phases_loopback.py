"""Every phase against the loopback server, through the same driver `./dev main` uses,
with and without faults."""

import json
from pathlib import Path

import pytest

from benchmarks.loopback_server import Truth
from runners.code_digest import runners_digest
from runners.measure.recorder import Recorder
from runners.results.store import LocalStore
from runners.run_context import new_context
from runners.workflow import driver
from runners.workflow import phases
from tests.runners.conftest import benchmark_plan, write_openai_experiment


def run_dir(outcome) -> Path:
    ctx = outcome["context"]
    return Path(ctx["store"]) / ctx["run_prefix"]


def load(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def test_phase_list_is_in_design_order():
    assert phases.PHASES == ("provision", "await_ready", "warmup", "decode", "stream",
                             "context", "load", "quality", "toolcall", "cost", "teardown",
                             "report")


def test_a_clean_run_measures_the_truth(loopback, tmp_path):
    truth = Truth(ttft_s=0.05, gap_s=0.004)
    server = loopback(truth)
    exp = write_openai_experiment(tmp_path, server.base_url)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    # The small plan has no context_lengths: that phase is skipped (test_context_phase.py).
    assert [r["state"] for r in outcome["results"]] == [
        "skipped" if p == "context" else "done" for p in phases.PHASES]
    folder = run_dir(outcome)
    summary = load(folder, "summary.json")
    assert summary["schema"] == "benchstack.summary/1"
    # Loose bounds: this checks the arithmetic, not the timing precision (a loaded CI
    # machine adds milliseconds); benchmarks/harness_accuracy.py reports the precision.
    assert summary["decode"]["tokens_per_s"] == pytest.approx(1 / truth.gap_s, rel=0.15)
    assert summary["decode"]["intercept_s"] == pytest.approx(truth.ttft_s - truth.gap_s,
                                                             abs=0.03)
    assert summary["decode"]["tokens_verified"] is True
    ttft = summary["stream"]["ttft_s"]
    assert truth.first_content_s() <= ttft["p50"] < truth.first_content_s() + 0.04
    assert summary["stream"]["tpot_s"]["p50"] == pytest.approx(truth.tpot_s(32), rel=0.15)
    assert set(summary["stream"]["ttft_s"]) == {"p50", "p90", "p99", "mean", "n",
                                                "p50_interval_95", "p99_interval_95"}
    low, high = ttft["p50_interval_95"]  # bootstrap over the streamed requests' records
    assert low <= ttft["p50"] <= high
    assert summary["stream"]["ttft_s"]["n"] == 4  # SMALL_PLAN streams four replies
    assert [lvl["concurrency"] for lvl in summary["load"]] == [1, 4]
    assert [lvl["requests"] for lvl in summary["load"]] == [2, 8]
    # Four concurrent streams of 32 tokens: about four times the single-stream rate.
    assert summary["load"][1]["tokens_per_s"] > 2.5 * summary["load"][0]["tokens_per_s"]
    quality = summary["quality"]
    assert (quality["correct"], quality["correct_raw"], quality["total"]) == (40, 40, 40)
    assert quality["interval_95"] == pytest.approx([0.9124, 1.0], abs=1e-4)  # Wilson, 40/40
    assert summary["toolcall"] == {"supported": True, "runs": 2, "correct": 2, "filter_ok": 2}
    assert summary["degenerate_responses"] == 0
    assert summary["placement"]["region"] == "local"
    # The cost phase ran on the measurements so far; an endpoint we do not bill has no price.
    cost = summary["cost"]
    assert cost["billing"] == "none" and cost["usd_per_hour"] is None
    assert cost["usd_per_million_output_tokens"]["one_request_tokens_per_s"] == \
        summary["decode"]["tokens_per_s"]
    lines = (folder / "requests.jsonl").read_text().splitlines()
    phases_seen = [json.loads(line)["phase"] for line in lines]
    assert phases_seen.count("decode") == 6 and phases_seen.count("quality") == 40
    assert phases_seen.count("load") == 10
    manifest = load(folder, "manifest.json")
    assert manifest["experiment"]["name"] == "loop-test"
    assert manifest["client"]["kind"] == "local"
    assert manifest["runners_digest"] == runners_digest()
    assert "| decode rate (tokens/s) |" in (folder / "report.md").read_text()


def test_decode_counts_errors_and_degenerate_replies_apart(loopback, tmp_path):
    # warmup takes the first 6 requests (4 shapes + quality + toolcall)
    faults = [None] * 6 + ["http500", "degenerate"]
    server = loopback(faults=faults)
    exp = write_openai_experiment(tmp_path, server.base_url)
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path)))
    decode = load(folder, "decode.json")
    statuses = [s["status"] for s in decode["samples"]]
    assert statuses.count("error") == 1 and statuses.count("degenerate") == 1
    assert decode["degenerate_responses"] == 1
    assert decode["tokens_per_s"] is not None  # the remaining samples still give a rate
    assert load(folder, "summary.json")["degenerate_responses"] == 1


def test_missing_usage_leaves_decode_unverified(loopback, tmp_path):
    server = loopback(faults=[None] * 6 + ["no_usage"] * 6)
    exp = write_openai_experiment(tmp_path, server.base_url)
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path)))
    decode = load(folder, "decode.json")
    assert decode["tokens_verified"] is False and "no usage" in decode["note"]


def test_stream_faults_are_counted_and_excluded(loopback, tmp_path):
    # after warmup (6) and decode (6): the 4 stream requests
    server = loopback(Truth(hang_s=1.0), faults=[None] * 12 + ["cut", "hang", "http500", None])
    exp = write_openai_experiment(tmp_path, server.base_url)
    context = {"request_timeout_s": 0.3}
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path), context_overrides=context,
                                           provider_kwargs={"request_timeout_s": 0.3}))
    stream = load(folder, "stream.json")
    assert stream["requests"] == 4 and stream["ok"] == 1
    assert stream["errors"] == 3 and stream["timeouts"] == 1
    assert stream["ttft_s"]["n"] == 1


def test_load_counts_throttles_apart_from_errors(loopback, tmp_path):
    # warmup 6, decode 6, stream 4, then load: c=1 x2, c=4 x2
    faults = [None] * 16 + [None, None, "http429", "http500", "http429", None]
    server = loopback(faults=faults)
    exp = write_openai_experiment(tmp_path, server.base_url)
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path)))
    level = load(folder, "load.json")["levels"][1]
    assert level["requests"] == 8 and level["throttles"] == 2 and level["errors"] == 1
    assert level["ok"] == 5 and level["latency_s"]["n"] == 5
    lag = level["scheduling_lag_s"]
    assert 0 <= lag["p50"] < 0.05


def test_quality_scores_wrong_and_degenerate_answers(loopback, tmp_path):
    plan = benchmark_plan(decode_repeats=1, stream_requests=1, concurrency=[1], load_batches=1,
                          toolcall_runs=0, decode_lengths=[4, 8], stream_tokens=4, load_tokens=4)
    # warmup 5 (no toolcall shape), decode 2, stream 1, load 1: then 40 questions
    server = loopback(faults=[None] * 9 + ["degenerate", "empty", "http500"])
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan, tools=False)
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path)))
    quality = load(folder, "quality.json")
    assert quality["correct"] == 37 and quality["total"] == 40
    assert [a["status"] for a in quality["answers"][:3]] == ["degenerate", "degenerate", "error"]
    assert load(folder, "toolcall.json")["skipped"] is True
    assert load(folder, "summary.json")["toolcall"]["supported"] is None


def test_backend_without_tools_records_not_supported(loopback, tmp_path):
    exp = write_openai_experiment(tmp_path, loopback().base_url, tools=False)
    folder = run_dir(driver.run_experiment(str(exp), str(tmp_path)))
    toolcall = load(folder, "toolcall.json")
    assert toolcall["supported"] is False and toolcall["note"] == "not supported"
    assert "not supported" in (folder / "report.md").read_text()


def test_unreachable_server_skips_to_teardown_and_report(tmp_path):
    exp = write_openai_experiment(tmp_path, "http://127.0.0.1:9")
    outcome = driver.run_experiment(str(exp), str(tmp_path), context_overrides={
        "ready_budget_s": 0.5})
    states = {r["phase"]: r["state"] for r in outcome["results"]}
    assert states == {"provision": "done", "await_ready": "failed", "teardown": "done",
                      "report": "done"}
    folder = run_dir(outcome)
    assert "not ready within 0.5 s" in load(folder, "await_ready.json")["message"]
    assert load(folder, "summary.json")["decode"]["tokens_per_s"] is None


def test_run_phase_is_callable_alone_with_json_context(loopback, tmp_path):
    """The workflow calls phases one by one with a JSON context."""
    exp = write_openai_experiment(tmp_path, loopback().base_url)
    context = json.loads(json.dumps(new_context(str(exp), str(tmp_path))))
    first = phases.run_phase("provision", context)
    assert first["state"] == "done" and first["updates"]["placement"]["base_url"]
    context.update(first["updates"])
    ready = phases.run_phase("await_ready", context)
    assert ready["state"] == "done"
    context.update(ready["updates"])
    result = phases.run_phase("decode", json.loads(json.dumps(context)))
    assert result["state"] == "done" and result["key"].endswith("decode.json")
    again = phases.run_phase("decode", context)  # nothing is overwritten
    assert again["state"] == "failed" and "already written" in again["error"]
    with pytest.raises(ValueError):
        phases.run_phase("nope", context)


def test_provision_failure_still_writes_manifest_and_report(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHSTACK_TEST_KEY", raising=False)
    exp = write_openai_experiment(tmp_path, "http://127.0.0.1:9")
    exp.write_text(exp.read_text().replace('/v1"', '/v1"\napi_key_env = "BENCHSTACK_TEST_KEY"'))
    outcome = driver.run_experiment(str(exp), str(tmp_path))
    provision = outcome["results"][0]
    assert provision["state"] == "failed" and "BENCHSTACK_TEST_KEY" in provision["error"]
    assert [r["phase"] for r in outcome["results"]] == ["provision", "teardown", "report"]
    folder = run_dir(outcome)
    assert load(folder, "manifest.json")["placement"] is None
    assert "BENCHSTACK_TEST_KEY" in (folder / "report.md").read_text()


def test_negative_intercept_is_explained(tmp_path):
    from runners.measure import phases as measure

    class SlowingDown:  # per-token time grows with length: t = n * (0.001 + n * 1e-5)
        supports_tools = False

        def chat(self, ask, intended_s=None):
            from runners.backends.reply import Reply
            n = ask.max_tokens
            return Reply(text=" ".join(f"w{i}" for i in range(n)), completion_tokens=n,
                         usage_source="server", send_s=0.0, last_s=n * (0.001 + n * 1e-5))

    class Plan:
        decode_lengths, decode_repeats, request_deadline_s = (16, 512), 1, None

    class FakeRun:
        plan = Plan()
        store = LocalStore(tmp_path)
        key = staticmethod(lambda name: name)

    rec = Recorder(FakeRun(), "decode", SlowingDown())
    result = measure.decode(FakeRun(), rec)
    assert result["intercept_s"] < 0 and "negative intercept" in result["note"]
    assert result["tokens_verified"] is True
