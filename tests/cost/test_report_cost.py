"""The cost block in a run's own report (report.md's Cost section)."""

from __future__ import annotations

import json

from runners import experiment
from runners.cost import phase as cost_phase
from runners.results import report
from tests.conftest import EXPERIMENTS_DIR


def _files(exp: experiment.Experiment) -> dict:
    return {
        "manifest": {"run_id": "r1", "started_at": "2026-12-03T00:00:00Z",
                     "experiment": json.loads(json.dumps(exp.to_dict())),
                     "placement": {"region": "us-east-2", "az": "us-east-2a",
                                   "instance_type": "g6.xlarge"}},
        "provision": {"started_at": "2026-12-03T00:00:00+00:00"},
        "teardown": {"finished_at": "2026-12-03T00:30:00+00:00"},
        "decode": {"tokens_per_s": 60.0, "intercept_s": 0.1, "short_tokens": 16,
                   "long_tokens": 512, "repeats": 5, "tokens_verified": True},
        "load": {"levels": [{"concurrency": 16, "tokens_per_s": 600.0, "requests": 32,
                             "errors": 0, "throttles": 0, "latency_s": None}]},
    }


def test_an_hourly_run_reports_its_price_per_million_and_break_even():
    exp = experiment.find(EXPERIMENTS_DIR, "e2b-emb4-g6")
    files = _files(exp)
    files["cost"] = cost_phase.run({"experiment": exp,
                                    "results": report.build_summary(files)})
    cost = files["cost"]
    assert cost["billing"] == "hourly" and cost["usd_per_hour"] > 0
    per_million = cost["usd_per_million_output_tokens"]
    # $/hour over tokens/hour, in millions: the arithmetic the report shows
    assert per_million["one_request"] == round(cost["usd_per_hour"] / (60 * 3600) * 1e6, 6)
    summary = report.build_summary(files)
    text = report.markdown(summary, files, "", [])
    assert f"| $ / hour | ${cost['usd_per_hour']:,.3f} |" in text
    assert (f"| $ / 1M output tokens, concurrency 16 (600.0 tokens/s) | "
            f"${per_million['highest_concurrency']:,.3f} |") in text
    assert f"{cost['break_even']['output_tokens_per_s']:.1f} |" in text
    assert "| this run: billable minutes, $ | 30.0," in text
