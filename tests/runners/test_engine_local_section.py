"""The report's Local engine section, the summary's host block and the local roofline in
compare, from phase files shaped like a real local run's (SmolLM2 on 2 cores)."""

from pathlib import Path

import pytest

from runners import hardware
from runners.results import compare, engine_local_section, report

HOST = {"memory_bandwidth_gb_per_s": 13.9, "cpu_count": 2,
        "bandwidth_method": "stdlib memcpy of 128 MiB, best of 5, bytes read + written "
                            "(STREAM Copy), one thread"}
SETTINGS = {"version": "0.3.36", "chat_format": "chatml-function-calling", "n_ctx": 2048,
            "n_threads": 1, "n_threads_batch": 2, "requests_at_a_time": 1, "tools": True}
FACTS = {"n_ctx_train": 8192, "n_ctx": 2048, "kv_cache_cells": 2048, "kv_cache_mib": 45.0}
WEIGHTS_GIB = 98362432 / hardware.GIB


def files(backend="local"):
    provisioned = {"region": "local", "az": None, "instance_type": None, "host": HOST,
                   "engine_settings": SETTINGS,
                   "memory": {"weights_gib": WEIGHTS_GIB, "kv_cache_tokens": 2048}}
    ready = {**provisioned, "engine_facts": FACTS}
    level = lambda c, rate: {"concurrency": c, "tokens_per_s": rate, "requests": c, "errors": 0,
                             "throttles": 0, "latency_s": None}
    return {"manifest": {"run_id": "r1", "experiment": {"name": "local-smollm2-135m",
                                                         "backend": backend, "model": {}},
                         "placement": provisioned},
            "await_ready": {"placement": ready},
            "decode": {"tokens_per_s": 50.4},
            "load": {"levels": [level(1, 49.7), level(2, 41.4), level(4, 50.4)]}}


def test_summary_has_the_measured_host():
    summary = report.build_summary(files())
    assert summary["host"] == HOST
    assert report.build_summary({"manifest": {"placement": {"instance_type": "g6.xlarge"}}}
                                )["host"] is None


def test_section_says_what_the_engine_is():
    f = files()
    text = "\n".join(engine_local_section.lines(report.build_summary(f), f))
    assert text.startswith("## Local engine")
    assert "llama-cpp-python 0.3.36" in text and "1 decode thread(s)" in text
    assert "one request at a time" in text and "engine, not the harness" in text
    assert "49.7 tokens/s at c=1 to 50.4 at c=4 (1.01x)" in text
    assert "trained for 8192 tokens (n_ctx_train)" in text and "2048-token window" in text
    assert "45 MiB" in text and "never sees the tool's count" in text
    assert "prefix-match hit" in text
    ceiling = 13.9e9 / 98362432
    assert f"{ceiling:.0f} tokens/s ceiling" in text and f"{50.4 / ceiling:.0%} of it" in text


def test_roofline_needs_all_three_figures():
    summary = report.build_summary(files())
    roof = engine_local_section.roofline(summary)
    assert roof["share"] == pytest.approx(50.4 * 98362432 / 13.9e9)
    summary["host"] = None
    assert engine_local_section.roofline(summary) is None


def test_no_section_for_cloud_runs():
    f = files(backend="ec2")
    assert engine_local_section.lines(report.build_summary(f), f) == []


def test_the_report_carries_the_section():
    f = files()
    summary = report.build_summary(f)
    assert "## Local engine" in report.markdown(summary, f, "no charts", [])


def test_compare_gives_the_local_row_a_roofline():
    row = compare.row(report.build_summary(files()), Path("runs/x/r1/summary.json"))
    assert row["bandwidth_gb_per_s"] == 13.9
    assert row["roofline_share"] == pytest.approx(50.4 * 98362432 / 13.9e9)
