"""Prompt length control and the load profiles, against the loopback server (which counts
prompt tokens as words plus a 4-token template, and serves vLLM's /tokenize)."""

import json
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.loopback_server import Truth
from runners.backends.openai_http import OpenAIHTTPClient
from runners.backends.reply import Ask, BackendClient, Reply
from runners.measure import prompts
from runners.measure.load import burst, concurrency, level, rate, sweep
from runners.measure.recorder import Recorder
from runners.workflow import driver
from tests.runners.conftest import benchmark_plan, write_openai_experiment


def records(rec: Recorder) -> list[dict]:
    return [json.loads(line) for line in rec.lines]


def test_tokenize_builds_the_exact_length_without_a_request(loopback):
    server = loopback()
    rec = Recorder(None, "stream", OpenAIHTTPClient(server.base_url, "loopback"))
    cal = prompts.PromptBuilder(rec).calibrate(300)
    assert (cal.method, cal.counted, cal.note) == ("tokenize", 300, None)
    assert rec.lines == []  # /tokenize generates nothing and sends no chat request
    assert server.bodies == []


def test_without_tokenize_a_usage_probe_calibrates_and_is_recorded(loopback):
    server = loopback(Truth(ttft_s=0.001, gap_s=0.0005, tokenize=False))
    rec = Recorder(None, "stream", OpenAIHTTPClient(server.base_url, "loopback"))
    builder = prompts.PromptBuilder(rec)
    cal = builder.calibrate(250)
    assert (cal.method, cal.counted) == ("usage-probe", 250)
    probes = records(rec)
    assert probes and all(p["shape"] == "prompt-probe" and p["max_tokens"] == 1 for p in probes)
    assert probes[0]["prompt_tokens_asked"] == 250
    # Built once per length: asking again sends nothing more.
    builder.ask(250, 8, stream=True, variant=3)
    assert len(rec.lines) == len(probes)
    reply = rec.send(builder.ask(250, 8, stream=False, variant=5))
    assert reply.prompt_tokens == 250


def test_variants_share_no_prefix_beyond_the_instruction():
    a, b = (prompts.messages_for(50, v)[0]["content"] for v in (0, 1))
    assert a.startswith(prompts.INSTRUCTION) and b.startswith(prompts.INSTRUCTION)
    assert a.split()[len(prompts.INSTRUCTION.split())] != b.split()[len(prompts.INSTRUCTION.split())]
    assert len(a.split()) == len(b.split())


class _Silent(BackendClient):
    """An engine that counts nothing: no /tokenize and no usage."""

    def chat(self, ask: Ask, intended_s=None) -> Reply:
        now = time.perf_counter()
        return Reply(text="ok", send_s=now, first_s=now, last_s=now, chunk_s=[now])


def test_an_engine_that_never_counts_is_said_so():
    builder = prompts.PromptBuilder(Recorder(None, "stream", _Silent()))
    block = builder.report(100, [])
    assert block["method"] == "none" and block["within_tolerance"] is None
    assert "unverified" in block["note"]


def test_a_template_longer_than_the_ask_is_said_so(loopback):
    server = loopback()
    builder = prompts.PromptBuilder(Recorder(None, "x", OpenAIHTTPClient(server.base_url, "m")))
    block = builder.report(5, [])
    assert block["within_tolerance"] is False and "more than the 5 asked" in block["note"]


def test_stream_phase_sends_the_asked_length_and_records_both_counts(loopback, tmp_path):
    server = loopback()
    plan = benchmark_plan(decode_lengths=[16, 32], decode_repeats=1, stream_requests=3,
                          stream_tokens=16, concurrency=[2], load_tokens=8, load_batches=1,
                          toolcall_runs=0, quality_suite="none", prompt_tokens=400)
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    folder = tmp_path / "store" / outcome["context"]["run_prefix"]
    stream = json.loads((folder / "stream.json").read_text())
    assert stream["prompt"]["asked"] == 400 and stream["prompt"]["within_tolerance"] is True
    assert stream["prompt"]["served_min"] == stream["prompt"]["served_max"] == 400
    lines = [json.loads(x) for x in
             (folder / "requests" / "stream.jsonl").read_text().splitlines()]
    assert [(r["prompt_tokens_asked"], r["prompt_tokens"]) for r in lines] == [(400, 400)] * 3
    load = json.loads((folder / "load.json").read_text())
    assert load["prompt"]["within_tolerance"] is True
    warmup = json.loads((folder / "warmup.json").read_text())
    assert "prompt" in [s["shape"] for s in warmup["shapes"]]
    assert load["levels"][0]["input_tokens_per_s"] > 0


# ---------------------------------------------------------------- arrivals


@pytest.mark.parametrize("burstiness", [0.5, 1.0, 4.0])
def test_gamma_gaps_average_one_over_the_rate_whatever_the_burstiness(burstiness):
    gaps = rate.gaps_s(10.0, 20000, "poisson", burstiness, random.Random(1))
    assert statistics.fmean(gaps) == pytest.approx(0.1, rel=0.03)
    # Coefficient of variation of a gamma with shape k is 1 / sqrt(k).
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert cv == pytest.approx(1 / burstiness ** 0.5, rel=0.05)


def test_constant_arrivals_are_evenly_spaced_and_seeded_ones_repeat():
    assert rate.arrival_offsets_s(4, 1.0, "constant", 1.0, 0) == [0, 0.25, 0.5, 0.75]
    a = rate.arrival_offsets_s(20, 3.0, "poisson", 1.0, 7)
    assert a == rate.arrival_offsets_s(20, 3.0, "poisson", 1.0, 7)
    assert a != rate.arrival_offsets_s(20, 3.0, "poisson", 1.0, 8)


def test_window_cuts_warmup_and_cooldown_and_counts_tokens_inside():
    w = level.Window(start_s=10.0, duration_s=10.0, warmup_s=2.0, cooldown_s=3.0)
    assert (w.part(11.9), w.part(12.0), w.part(16.99), w.part(17.0)) == \
        ("warmup", "measured", "measured", "cooldown")
    r = Reply(completion_tokens=8, send_s=11.0, first_s=11.5, last_s=13.0,
              chunk_s=[11.5, 11.8, 12.1, 12.4])
    assert level.tokens_inside(r, w) == 4.0  # 2 of 4 chunks inside, 8 tokens


def test_open_loop_rate_level_holds_its_rate_and_never_waits_for_replies(loopback):
    # Replies take 0.3 s while requests arrive every 0.05 s: a closed loop of one would
    # manage 3/s, the open loop must keep 20/s with ~6 in flight.
    server = loopback(Truth(ttft_s=0.3, gap_s=0.0001))
    rec = Recorder(None, "load", OpenAIHTTPClient(server.base_url, "loopback"))
    ask = lambda i: Ask([{"role": "user", "content": "hi"}], 4, stream=True, force_tokens=True)
    window = level.Window(time.perf_counter() + 0.01, 2.0, 0.5, 0.3)
    with ThreadPoolExecutor(max_workers=64) as pool:
        figures, replies = rate.run_level(rec, ask, 20.0, window, pool, arrival="constant",
                                          burstiness=1.0, seed=0)
    assert figures["scheduled"] == 40 and figures["ok"] == figures["requests"]
    assert figures["requests_per_s"] == pytest.approx(20.0, rel=0.05)
    assert abs(figures["rate_shortfall"]) < 0.05
    assert figures["scheduling_lag_s"]["p99"] < 0.05
    assert figures["ttft_s"]["p50"] == pytest.approx(0.3, abs=0.05)
    parts = [r["window"] for r in records(rec)]
    assert {"warmup", "measured", "cooldown"} <= set(parts)
    assert figures["cut_requests"] == parts.count("warmup") + parts.count("cooldown")
    assert all(r["target_rate"] == 20.0 for r in records(rec))


def test_concurrency_level_keeps_exactly_c_in_flight(loopback):
    server = loopback(Truth(ttft_s=0.05, gap_s=0.002))
    rec = Recorder(None, "load", OpenAIHTTPClient(server.base_url, "loopback"))
    ask = lambda i: Ask([{"role": "user", "content": "hi"}], 16, stream=True, force_tokens=True)
    window = level.Window(time.perf_counter() + 0.01, 1.5, 0.2, 0.2)
    with ThreadPoolExecutor(max_workers=3) as pool:
        figures, replies = concurrency.run_level(rec, ask, 3, window, pool)
    spans = sorted((r.send_s, r.last_s) for r in replies)
    for t, _ in spans:  # at every send, at most 3 requests are open
        assert sum(a <= t < b for a, b in spans) <= 3
    # Each request lasts ~0.08 s; 3 workers for 1.5 s: ~55 requests, none idle long.
    assert len(replies) >= 40
    assert figures["output_tokens_per_s"] == pytest.approx(3 * 16 / 0.08, rel=0.25)


def test_burst_level_keeps_the_seeds_figures(loopback):
    server = loopback(Truth(ttft_s=0.02, gap_s=0.001))
    rec = Recorder(None, "load", OpenAIHTTPClient(server.base_url, "loopback"))
    ask = lambda i: Ask([{"role": "user", "content": "hi"}], 8, stream=True, force_tokens=True)
    with ThreadPoolExecutor(max_workers=4) as pool:
        figures, replies = burst.run_level(rec, ask, 4, 2, pool)
    assert figures["requests"] == 8 and figures["output_tokens"] == 64
    assert figures["tokens_per_s"] == pytest.approx(64 / figures["seconds"])
    assert [r["batch"] for r in records(rec)].count(1) == 4


def test_sweep_rises_until_throughput_stops_growing():
    served = {1.0: 100, 2.0: 200, 3.0: 290, 4.5: 300}

    def fake(rate_, i):
        return {"target_rate": rate_, "output_tokens_per_s": served[rate_]}

    levels, block = sweep.run((1.0, 2.0), fake)
    assert [lvl["target_rate"] for lvl in levels] == [1.0, 2.0, 3.0, 4.5]
    assert block["saturated"] is True and block["peak_rate"] == 4.5


def test_a_rate_plan_runs_through_the_driver_into_summary_and_report(loopback, tmp_path):
    server = loopback()
    plan = benchmark_plan(decode_lengths=[16, 32], decode_repeats=1, stream_requests=1,
                          stream_tokens=8, load_tokens=8, toolcall_runs=0, quality_suite="none",
                          load_mode="rate", rates=[5, 10], load_duration_s=2.0,
                          load_warmup_s=0.5, load_cooldown_s=0.5, arrival="constant")
    plan += "\n[benchmark.slo]\nttft_ms = 2000\npercentile = 99\n"
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    assert all(r["state"] != "failed" for r in outcome["results"]), outcome["results"]
    folder = tmp_path / "store" / outcome["context"]["run_prefix"]
    summary = json.loads((folder / "summary.json").read_text())
    assert [lvl["target_rate"] for lvl in summary["load"]] == [5.0, 10.0]
    assert [lvl["mode"] for lvl in summary["load"]] == ["rate", "rate"]
    assert summary["load"][1]["requests_per_s"] == pytest.approx(10, rel=0.1)
    assert summary["load"][1]["ttft_s"]["n"] == summary["load"][1]["requests"]
    assert summary["load_profile"]["mode"] == "rate"
    assert [lvl["slo"]["holds"] for lvl in summary["load"]] == [True, True]
    assert summary["load"][1]["slo"]["goodput_requests_per_s"] == pytest.approx(10, rel=0.1)
    assert summary["load_profile"]["slo"]["highest_rate_holding"] == 10.0
    text = (folder / "report.md").read_text()
    assert "## Load levels (rate)" in text and "| 10/s |" in text
    assert "## Throughput vs concurrency" not in text
    assert "SLO (TTFT p99 <= 2000 ms): highest rate holding it 10 requests/s" in text


class _CountingEngine(BackendClient):
    """An engine with no /tokenize whose tokenizer splits words unevenly (1.3 tokens a
    word, as Bedrock's or SageMaker's usage would count an unfamiliar vocabulary)."""

    def __init__(self):
        self.asks = []

    def chat(self, ask: Ask, intended_s=None) -> Reply:
        self.asks.append(ask)
        words = sum(len(m["content"].split()) for m in ask.messages)
        now = time.perf_counter()
        return Reply(text="ok", prompt_tokens=7 + round(words * 1.3), completion_tokens=1,
                     usage_source="server", send_s=now, first_s=now, last_s=now, chunk_s=[now])


@pytest.mark.parametrize("asked", [100, 1000, 3000])
def test_calibration_converges_when_words_are_not_tokens(asked):
    engine = _CountingEngine()
    builder = prompts.PromptBuilder(Recorder(None, "stream", engine))
    cal = builder.calibrate(asked)
    assert cal.method == "usage-probe" and len(cal.probes) <= prompts.MAX_PROBES
    assert abs(cal.counted - asked) <= 1  # 1.3 tokens a word: a step can skip one count
    assert all(a.max_tokens == 1 for a in engine.asks)  # probes generate one token
    assert builder.report(asked, [])["within_tolerance"] is True


class _BedrockCounting:
    """bedrock-runtime Converse that counts inputTokens as words plus a 5-token template."""

    def converse(self, **kwargs):
        words = sum(len(b.get("text", "").split()) for m in kwargs["messages"]
                    for b in m["content"])
        return {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                "stopReason": "max_tokens",
                "usage": {"inputTokens": 5 + words, "outputTokens": 1, "totalTokens": 6 + words}}


def test_bedrock_prompts_are_built_from_its_usage():
    from runners.backends.bedrock_converse import BedrockConverseClient

    client = BedrockConverseClient(_BedrockCounting(), "us.amazon.nova-micro-v1:0")
    cal = prompts.PromptBuilder(Recorder(None, "stream", client)).calibrate(2048)
    assert (cal.method, cal.counted) == ("usage-probe", 2048)
