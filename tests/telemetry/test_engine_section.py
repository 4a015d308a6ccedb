"""The report's telemetry, from run folders shaped as the workflow writes them: a
SageMaker run (engine facts with the placement, container log and CloudWatch metrics
copied at teardown) and an EC2 run (engine log and nvidia-smi samples from the boot
script), and runs with a source missing."""

from __future__ import annotations

import json
from pathlib import Path

from runners.results import report
from runners.results.store import LocalStore
from runners.telemetry import engine_log
from tests.telemetry.cloudwatch_fixtures import events_from_log

FIXTURES = Path(__file__).with_name("fixtures")
T0 = 1760227000  # 2025-10-11T23:56:40Z, before the fixture log's first line


def iso(epoch: float) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_folder(tmp_path: Path, backend: str, placement: dict) -> LocalStore:
    store = LocalStore(tmp_path)
    store.put_json("manifest.json", {
        "run_id": "r1", "started_at": iso(T0),
        "experiment": {"name": f"exp-{backend}", "backend": backend,
                       "model": {"id": "google/gemma-4-E2B-it", "build": "emb4",
                                 "precision": "int4"}},
        "placement": placement})
    store.put_json("decode.json", {"tokens_per_s": 141.7, "intercept_s": 0.562,
                                   "started_at": iso(T0 + 340), "finished_at": iso(T0 + 380)})
    events = events_from_log()
    stats_s = [e["timestamp"] / 1000 for e in events if "Engine 000:" in e["message"]]
    store.put_json("load.json", {"tokens": 256, "started_at": iso(T0 + 380),
                                 "finished_at": iso(T0 + 400), "levels": [
        {"concurrency": 1, "tokens_per_s": 105.1, "requests": 2, "errors": 0, "throttles": 0,
         "latency_s": None, "window": {"start_s": stats_s[0] - 9, "end_s": stats_s[0] - 1},
         "server": {"source": None, "samples": 0, "missing": "no /metrics: sagemaker-runtime"}},
        {"concurrency": 16, "tokens_per_s": 1500.0, "requests": 32, "errors": 0, "throttles": 0,
         "latency_s": None, "window": {"start_s": stats_s[1] - 9, "end_s": stats_s[1] - 1},
         "server": {"source": None, "samples": 0, "missing": "no /metrics: sagemaker-runtime"}},
    ]})
    return store


def sagemaker_placement() -> dict:
    facts = engine_log.parse(events_from_log_items(), "engine log: CloudWatch Logs /aws/...")
    facts["stats"] = engine_log.stats_summary(facts["stats"])
    return {"region": "us-east-2", "instance_type": "ml.g6.xlarge", "engine_facts": facts,
            "container_healthy_at": "2026-10-12T00:19:04Z",
            "timeline": [{"event": "creating", "at": "2026-10-12T00:16:40Z"},
                         {"event": "container_healthy", "at": "2026-10-12T00:19:04Z"},
                         {"event": "in_service", "at": "2026-10-12T03:35:58Z"}]}


def events_from_log_items() -> list[dict]:
    return [{"timestamp_ms": e["timestamp"], "message": e["message"]} for e in events_from_log()]


def test_sagemaker_run_report_states_every_figure_with_its_source(tmp_path):
    placed = {"region": "us-east-2", "instance_type": "ml.g6.xlarge"}
    store = run_folder(tmp_path, "sagemaker", placed)  # the manifest keeps provision's
    store.put_json("await_ready.json", {"state": "ready", "placement": sagemaker_placement()})
    lines = "".join(json.dumps({"timestamp_ms": e["timestamp"], "stream": e["logStreamName"],
                                "message": e["message"]}) + "\n" for e in events_from_log())
    store.put_bytes("telemetry/engine-log.jsonl", lines.encode())
    store.put_json("telemetry/cloudwatch-metrics.json", {
        "source": "CloudWatch GetMetricData (EndpointName=bs-x, VariantName=AllTraffic)",
        "metrics": {"overhead_latency_ms": {"value": 240.0, "peak": 260.0, "unit": "ms"},
                    "invocations": {"value": 172.0, "peak": 60.0, "unit": "count"}},
        "missing": {"model_setup_time_ms": "no AWS/SageMaker ModelSetupTime datapoint"}})
    store.put_json("telemetry.json", {"files": ["cloudwatch-metrics.json", "engine-log.jsonl"],
                                      "missing": {}})
    out = report.write_report(store, "")
    s = out["summary"]
    assert s["memory"]["weights_gib"] == 2.86 and s["memory"]["kv_cache_tokens"] == 1_209_977
    assert s["memory"]["source"].startswith("engine log: ")
    levels = s["telemetry"]["server_load"]
    assert (levels[0]["running_peak"], levels[1]["running_peak"]) == (1, 16)
    assert levels[1]["kv_cache_usage_pct_peak"] == 0.4
    assert "1 stats lines" in levels[1]["source"]
    md = out["markdown"]
    assert "## What the engine allocates" in md
    assert "| KV cache | 1,209,977 tokens | engine log: " in md
    assert "| peak activation (profiling run) | — | missing: no line in a known format" in md
    assert "OverheadLatency is 240.0 ms per request; the client's decode intercept" in md
    assert "562.0 ms" in md
    assert "| ModelSetupTime | — | missing: no AWS/SageMaker ModelSetupTime datapoint |" in md
    assert "InService came 196.9 min after the container was healthy" in md


def test_ec2_run_with_device_samples_and_engine_log(tmp_path):
    store = run_folder(tmp_path, "ec2", {"region": "us-east-2", "instance_type": "g6.xlarge"})
    store.put_bytes("telemetry/engine.log", (FIXTURES / "vllm-journal.log").read_bytes())
    csv = "".join(f"{iso(T0 + s).replace('-', '/').replace('T', ' ').rstrip('Z')}.000, "
                  f"{90 if 340 <= s <= 380 else 5}, {60 if 340 <= s <= 380 else 1}, 20480, "
                  f"23034, 6251, 71.5\n" for s in range(330, 400))
    store.put_bytes("telemetry/nvidia-smi.csv", csv.encode())
    store.put_json("telemetry.json", {"files": ["engine.log", "nvidia-smi.csv"], "missing": {}})
    out = report.write_report(store, "")
    s = out["summary"]
    assert s["memory"]["kv_cache_tokens"] == 650_783
    decode = s["telemetry"]["device"]["phases"]["decode"]
    assert decode["samples"] == 41 and decode["utilization_memory_pct_mean"] == 60
    md = out["markdown"]
    assert "| decode | 41 | 90% | 60% | 72 W | 20,480 MiB |" in md
    assert "the memory controller was busy 60% of the decode phase" in md
    assert "charts/device_utilization.png" in " ".join(out["written"])


def test_missing_sources_are_stated_never_blank(tmp_path):
    store = run_folder(tmp_path, "ec2", {"region": "us-east-2", "instance_type": "g6.xlarge"})
    store.put_json("telemetry.json", {"files": [], "missing": {
        "engine.log": "not in s3://cache/engines/e/telemetry/r1/ (the instance shipped none)",
        "nvidia-smi.csv": "not in s3://cache/engines/e/telemetry/r1/ (the instance shipped none)"}})
    out = report.write_report(store, "")
    assert out["summary"]["memory"]["missing"] == (
        "no engine log: not in s3://cache/engines/e/telemetry/r1/ (the instance shipped none)")
    md = out["markdown"]
    assert "no engine log: not in s3://cache/engines/e/telemetry/r1/" in md
    assert "## Accelerator over the phases\n\nnot in s3://cache" in md


def test_sagemaker_facts_from_await_ready_when_teardown_copied_nothing(tmp_path):
    store = run_folder(tmp_path, "sagemaker", {"region": "us-east-2"})
    store.put_json("await_ready.json", {"state": "ready", "placement": sagemaker_placement()})
    store.put_json("telemetry.json", {"files": [], "missing": {
        "engine-log.jsonl": "no engine log: logs:FilterLogEvents on /aws/... denied",
        "cloudwatch-metrics.json": "GetMetricData for bs-x: AccessDenied"}})
    s = report.write_report(store, "")["summary"]
    assert s["memory"]["kv_cache_tokens"] == 1_209_977
    assert s["memory"]["source"] == "engine log: CloudWatch Logs /aws/..."
    assert s["telemetry"]["endpoint_metrics"] == {
        "source": None, "missing": "GetMetricData for bs-x: AccessDenied"}
    assert s["telemetry"]["container_healthy_at"] == "2026-10-12T00:19:04Z"
