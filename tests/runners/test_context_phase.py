"""The context phase against a loopback server with a programmed prefill rate: decode
stays flat across prompt lengths while TTFT grows and end-to-end falls."""

import json

import pytest

from benchmarks.loopback_server import Truth
from runners.workflow import driver
from tests.runners.conftest import benchmark_plan, write_openai_experiment

PREFILL_S_PER_TOKEN = 0.0002  # 5,000 prompt tokens/s


def test_context_sweep_reproduces_decode_flat_end_to_end_falls(loopback, tmp_path):
    truth = Truth(ttft_s=0.01, gap_s=0.002, prefill_s_per_token=PREFILL_S_PER_TOKEN)
    server = loopback(truth)
    plan = benchmark_plan(decode_lengths=[16, 64], decode_repeats=1, stream_requests=1,
                          stream_tokens=8, concurrency=[1], load_tokens=8, load_batches=1,
                          toolcall_runs=0, quality_suite="none",
                          context_lengths=[64, 512, 2048], context_repeats=2)
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    folder = tmp_path / "store" / outcome["context"]["run_prefix"]
    summary = json.loads((folder / "summary.json").read_text())
    rows = summary["context"]
    assert [r["prompt_tokens"] for r in rows] == [64, 512, 2048]
    assert [r["served_prompt_tokens"] for r in rows] == [64, 512, 2048]
    for r in rows:
        assert set(r["ttft_s"]) == {"p50", "p90", "p99", "mean", "n"} and r["ttft_s"]["n"] == 4
        assert r["decode_tokens_per_s"] == pytest.approx(1 / truth.gap_s, rel=0.15)
        ttft_truth = truth.ttft_s + r["prompt_tokens"] * PREFILL_S_PER_TOKEN
        assert r["ttft_s"]["p50"] == pytest.approx(ttft_truth, abs=0.015)
        assert r["prefill_tokens_per_s"] == pytest.approx(r["prompt_tokens"] / ttft_truth,
                                                          rel=0.3)
    e2e = [r["end_to_end_tokens_per_s"] for r in rows]
    assert e2e[0] > e2e[1] > e2e[2]  # prefill grows, end-to-end falls
    context = json.loads((folder / "context.json").read_text())
    assert all(row["prompt"]["within_tolerance"] for row in context["lengths"])
    records = [json.loads(x) for x in
               (folder / "requests" / "context.jsonl").read_text().splitlines()]
    assert sum(r.get("shape") == "context-warmup" for r in records) == 3
    assert len(records) == 3 + 3 * 4
    text = (folder / "report.md").read_text()
    assert "## Context length" in text and "| 2048 / 2048 |" in text
    assert "Decode moves" in text


def test_no_context_lengths_skips_the_phase(loopback, tmp_path):
    server = loopback()
    plan = benchmark_plan(decode_lengths=[16, 32], decode_repeats=1, stream_requests=1,
                          stream_tokens=8, concurrency=[1], load_tokens=8, load_batches=1,
                          toolcall_runs=0, quality_suite="none")
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    states = {r["phase"]: r["state"] for r in outcome["results"]}
    assert states["context"] == "skipped"
    folder = tmp_path / "store" / outcome["context"]["run_prefix"]
    assert json.loads((folder / "summary.json").read_text())["context"] == []


def test_no_timed_request_repeats_another_prompt_or_its_prefix(loopback, tmp_path):
    """Prefix caching must not serve a timed prompt: every warmup, stream, context and
    load request of one run starts its filler differently from every other."""
    from runners.measure import prompts

    server = loopback()
    plan = benchmark_plan(decode_lengths=[16, 32], decode_repeats=1, stream_requests=3,
                          stream_tokens=8, concurrency=[2], load_tokens=8, load_batches=2,
                          toolcall_runs=0, quality_suite="none", prompt_tokens=120,
                          context_lengths=[64, 256], context_repeats=2)
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    driver.run_experiment(str(exp), str(tmp_path / "store"))
    skip = len(prompts.INSTRUCTION.split())
    timed = [b["messages"][0]["content"].split()[skip:skip + 3] for b in server.bodies
             if b.get("max_tokens", 0) > 1 and b["messages"][0]["content"].startswith(
                 prompts.INSTRUCTION) and len(b["messages"][0]["content"].split()) > skip + 3]
    # warmup's long-prompt shape, stream, context (warm + 4 each), load
    assert len(timed) == 1 + 3 + 2 * (1 + 4) + 4
    assert len({tuple(t) for t in timed}) == len(timed)
