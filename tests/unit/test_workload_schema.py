"""The workload fields of [benchmark]: prompt length, context sweep, load profile, SLO,
dataset; each bad value gets its one line."""

from __future__ import annotations

import pytest

from runners.experiment import Slo, parse
from tests.unit.test_experiment_schema import SAGEMAKER, error_of, with_


def bench(**values) -> dict:
    return with_(SAGEMAKER, "benchmark", values)


def test_defaults_keep_the_seeds_plan():
    plan = parse(SAGEMAKER, "x").benchmark
    assert (plan.load_mode, plan.concurrency, plan.load_batches) == ("burst", (1, 4, 16), 2)
    assert plan.prompt_tokens is None and plan.context_lengths == () and plan.slo is None


def test_a_rate_plan_with_an_slo_reads_back():
    plan = parse(bench(load_mode="rate", rates=[1, 2.5], arrival="constant", sweep=True,
                       slo={"ttft_ms": 500, "tpot_ms": 50}), "x").benchmark
    assert plan.rates == (1.0, 2.5) and plan.sweep is True
    assert plan.slo == Slo(ttft_ms=500.0, tpot_ms=50.0, e2el_ms=None, percentile=90.0)


@pytest.mark.parametrize("values, field, words", [
    ({"load_mode": "rate"}, "benchmark.rates", "is required with load_mode"),
    ({"rates": [1.0]}, "benchmark.rates", "only used with load_mode"),
    ({"load_mode": "rate", "rates": [2, 1]}, "benchmark.rates", "must rise"),
    ({"load_mode": "steady"}, "benchmark.load_mode", "allowed: burst, concurrency, rate"),
    ({"arrival": "bursty"}, "benchmark.arrival", "allowed: poisson, constant"),
    ({"context_lengths": [512, 64]}, "benchmark.context_lengths", "must rise"),
    ({"context_lengths": [64, 8000]}, "benchmark.context_lengths[1]",
     "exceed the engine's context of 8192"),
    ({"prompt_tokens": 8100}, "benchmark.prompt_tokens", "allowed up to 7936"),
    ({"load_duration_s": 8}, "benchmark.load_duration_s", "leaves nothing to measure"),
    ({"slo": {}}, "benchmark.slo.ttft_ms", "sets no bound"),
    ({"runner_max_rate": 10}, "benchmark.runner_max_rate", "needs load_mode = \"rate\""),
    ({"load_mode": "rate", "rates": [1], "sweep": True, "load_duration_s": 90},
     "benchmark.load_duration_s", "10 level(s) of 90 s exceed the 780 s"),
    ({"load_mode": "concurrency", "concurrency": [1, 16, 64], "load_duration_s": 300},
     "benchmark.load_duration_s", "allowed up to 260 s per level"),
    ({"slo": {"ttft": 5}}, "benchmark.slo.ttft", "unknown field"),
    ({"dataset": {"path": "p.jsonl", "format": "csv"}}, "benchmark.dataset.format",
     "allowed: jsonl, sharegpt"),
])
def test_bad_workload_gets_one_line(values, field, words):
    err = error_of(bench(**values))
    assert err.field_path == field and words in err.message, str(err)


def test_a_preset_lies_beneath_the_fields_the_file_sets():
    plan = parse(bench(preset="steady-chat", concurrency=[2],
                       slo={"e2el_ms": 9000}), "x").benchmark
    assert (plan.preset, plan.load_mode, plan.prompt_tokens) == ("steady-chat", "concurrency", 512)
    assert plan.concurrency == (2,)  # the file's value wins
    assert plan.slo == Slo(e2el_ms=9000.0)  # a file's [benchmark.slo] replaces the preset's


def test_every_preset_is_valid_and_survives_a_snapshot():
    import json

    from runners.experiment import from_snapshot, presets

    assert {"seed-004", "gemma4-context", "steady-chat", "poisson-sweep"} <= set(presets())
    for name in presets():
        exp = parse(bench(preset=name), "x")
        again = from_snapshot(json.loads(json.dumps(exp.to_dict())), "ssm")
        assert again.benchmark == exp.benchmark, name


def test_an_unknown_preset_names_the_known_ones():
    err = error_of(bench(preset="fast"))
    assert err.field_path == "benchmark.preset" and "seed-004" in err.message
