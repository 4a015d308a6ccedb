"""A run folder written the way the phases write one (runners/measure/phases.py shapes),
with figures of a small CPU model: decode ~49.6 tok/s with a 129 ms intercept, streamed
TTFT ~24 ms, load at 1, 2 and 4. Deterministic (seeded), so reports built from it can be
checked figure by figure."""

from __future__ import annotations

import json
import random
from pathlib import Path

from runners.measure import quality_suite
from runners.results.store import LocalStore

RATE, INTERCEPT_S, TTFT_S, TPOT_S = 49.6, 0.129, 0.024, 1 / 46.4


def _dist(values: list[float]) -> dict:
    from runners.measure import stats

    return stats.distribution(values)


def phase_files(run_id: str, *, seed: int = 1, rate: float = RATE,
                answers: dict[int, str] | None = None, finished: bool = True,
                experiment: str = "local-synthetic") -> dict:
    """Phase name -> JSON. `answers` overrides quality replies by question index."""
    rng = random.Random(seed)
    jitter = lambda s: s * (1 + rng.uniform(-0.03, 0.03))  # noqa: E731
    samples = []
    for i in range(5):
        for tokens in ((16, 512) if i % 2 == 0 else (512, 16)):
            samples.append({"tokens_requested": tokens, "completion_tokens": tokens,
                            "usage_source": "server", "status": "ok", "error": None,
                            "seconds": jitter(INTERCEPT_S + tokens / rate)})
    short = sorted(s["seconds"] for s in samples if s["tokens_requested"] == 16)[2]
    long = sorted(s["seconds"] for s in samples if s["tokens_requested"] == 512)[2]
    fitted = 496 / (long - short)
    ttft = [jitter(TTFT_S) for _ in range(10)]
    tpot = [jitter(TPOT_S) for _ in range(10)]
    stream_records = [{"phase": "stream", "status": "ok", "intended_at": None,
                       "sent_at": 1000.0 + i, "first_at": 1000.0 + i + a,
                       "last_at": 1000.0 + i + a + 63 * b, "completion_tokens": None,
                       "usage_source": "missing", "chunks": 64, "index": i}
                      for i, (a, b) in enumerate(zip(ttft, tpot))]
    levels = []
    for concurrency in (1, 2, 4):
        lat = [jitter(0.13 + 0.02 * concurrency + 128 * TPOT_S * (1 + 0.1 * concurrency))
               for _ in range(2 * concurrency)]
        levels.append({
            "concurrency": concurrency, "batches": 2, "requests": 2 * concurrency,
            "ok": 2 * concurrency, "errors": 0, "timeouts": 0, "throttles": 0, "degenerate": 0,
            "output_tokens": 128 * 2 * concurrency, "seconds": sum(lat) / concurrency,
            "tokens_per_s": 128 * 2 * concurrency / (sum(lat) / concurrency),
            "usage_missing": 2 * concurrency, "latency_s": _dist(lat),
            "ttft_s": _dist([jitter(TTFT_S * (1 + 0.8 * (concurrency - 1))) for _ in lat]),
            "scheduling_lag_s": _dist([jitter(0.0004) for _ in lat]), "errors_seen": []})
    qs = quality_suite.questions()
    replies = [q.prompt for q in qs]  # a base model: every reply echoes its question
    for i, text in (answers or {}).items():
        replies[i] = text
    quality_answers = [{"kind": q.kind, "prompt": q.prompt, "answer": text, "status": "ok",
                        "error": None, "correct": q.correct(text),
                        "correct_raw": q.correct_raw(text)} for q, text in zip(qs, replies)]
    files = {
        "manifest": {"schema": "benchstack.manifest/1", "run_id": run_id,
                     "started_at": "2026-12-03T09:00:00Z",
                     "experiment": {"name": experiment, "backend": "local",
                                    "model": {"id": "ggml-org/gemma-3-270m-GGUF",
                                              "served_name": "gemma-3-270m", "build": "q8_0",
                                              "precision": "int8"}},
                     "placement": {"region": "local", "az": None, "instance_type": None,
                                   "memory": {"weights_gib": 0.236}}},
        "provision": {"started_at": "2026-12-03T09:00:01Z", "placement": {"region": "local"},
                      "error": None},
        "await_ready": {"state": "ready", "ready_at": "2026-12-03T09:00:09Z"},
        "warmup": {"shapes": [], "failed": 0},
        "decode": {"short_tokens": 16, "long_tokens": 512, "repeats": 5, "samples": samples,
                   "tokens_per_s": fitted, "intercept_s": short - 16 / fitted,
                   "tokens_verified": True, "note": None},
        "stream": {"tokens": 64, "requests": 10, "ok": 10, "errors": 0, "timeouts": 0,
                   "throttles": 0, "degenerate": 0, "ttft_s": _dist(ttft),
                   "itl_s": _dist(tpot * 6), "tpot_s": _dist(tpot),
                   "e2el_s": _dist([a + 63 * b for a, b in zip(ttft, tpot)]),
                   "usage_missing": 10, "errors_seen": []},
        "load": {"tokens": 128, "levels": levels},
        "quality": {"suite": "compare40", "total": 40, "answers": quality_answers,
                    "correct": sum(a["correct"] for a in quality_answers),
                    "correct_raw": sum(a["correct_raw"] for a in quality_answers)},
        "toolcall": {"supported": False, "note": "not supported",
                     "reason": "backend 'local' as configured has no tool calls"},
    }
    one = fitted
    top = levels[-1]["tokens_per_s"]
    files["cost"] = {  # the cost phase's block for a $0.40/hour machine (shape: cost/phase.py)
        "billing": "hourly", "usd_per_hour": 0.40,
        "usd_per_million_output_tokens": {
            "one_request": 0.40 / (one * 3600) * 1e6, "one_request_tokens_per_s": one,
            "one_request_basis": "decode", "highest_concurrency": 0.40 / (top * 3600) * 1e6,
            "highest_concurrency_level": 4, "highest_concurrency_tokens_per_s": top},
        "missing": []}
    files["stream_requests"] = stream_records  # as report.read_files gives them
    if finished:
        files["teardown"] = {"state": "deleted", "finished_at": "2026-12-03T09:05:00Z"}
    return files


def write_run(root: Path, run_id: str = "20261203T090000Z-syn001", *, report: bool = False,
              **kwargs) -> LocalStore:
    """The run folder root/<run_id>/ with its phase files (and its report when `report`);
    returns its store."""
    from runners.results import report as run_report

    store = LocalStore(root / run_id)
    for name, data in phase_files(run_id, **kwargs).items():
        if name == "stream_requests":
            store.put_text("requests/stream.jsonl", "".join(json.dumps(r) + "\n" for r in data))
        else:
            store.put_json(f"{name}.json", data)
    if report:
        run_report.write_report(store, "")
    return store


def with_workload(files: dict, *, seed: int = 2) -> dict:
    """`files` plus what a GPU run adds: a context sweep (128-2048 prompt tokens), a rate
    profile's load levels (0.5-4 requests/s) instead of the bursts, and 1 Hz nvidia-smi
    samples over phases that carry their start and end times."""
    rng = random.Random(seed)
    jitter = lambda s: s * (1 + rng.uniform(-0.03, 0.03))  # noqa: E731
    files = dict(files)
    files["context"] = {"short_tokens": 16, "long_tokens": 512, "repeats": 3, "lengths": [
        {"prompt_tokens": tokens, "served_prompt_tokens": tokens + 9,
         "ttft_s": _dist([jitter(TTFT_S + tokens / 4000) for _ in range(7)]),
         "prefill_tokens_per_s": 4000.0 * (1 - tokens / 20000),
         "decode_tokens_per_s": RATE * (1 - tokens / 40000),
         "end_to_end_tokens_per_s": 512 / (TTFT_S + tokens / 4000 + 512 / RATE)}
        for tokens in (128, 512, 2048)]}
    levels = []
    for i, rate in enumerate((0.5, 1.0, 2.0, 4.0)):
        served = min(rate, 2.4)
        ttft = _dist([jitter(TTFT_S * (1 + 4 * max(0, rate - 2))) for _ in range(int(30 * rate))])
        levels.append({"mode": "rate", "concurrency": None, "target_rate": rate,
                       "requests": int(30 * rate), "errors": 0, "throttles": 0,
                       "requests_per_s": served, "sent_per_s": rate,
                       "output_tokens_per_s": 128 * served, "tokens_per_s": 128 * served,
                       "input_tokens_per_s": 64 * served, "total_tokens_per_s": 192 * served,
                       "rate_shortfall": 0.0, "ttft_s": ttft, "e2el_s": _dist(
                           [jitter(0.13 + 128 * TPOT_S * (1 + 0.2 * i)) for _ in range(9)]),
                       "latency_s": None, "slo": None})
    files["load"] = {"tokens": 128, "mode": "rate", "levels": levels}
    t0, rows = 1_764_752_400.0, []  # 2025-12-03T09:00:00Z
    for name, start, end in (("warmup", 10, 20), ("decode", 20, 60), ("stream", 60, 75),
                             ("context", 75, 110), ("load", 110, 170), ("quality", 170, 200)):
        files[name] = {**files.get(name, {}),
                       "started_at": _iso(t0 + start), "finished_at": _iso(t0 + end)}
    for s in range(0, 210):
        busy = 0 if s < 10 or s >= 200 else min(97, 40 + s // 4)
        rows.append({"t": t0 + s, "utilization_gpu_pct": busy,
                     "utilization_memory_pct": busy * 0.6, "memory_used_mib": 20000,
                     "memory_total_mib": 23034, "clocks_mem_mhz": 6251,
                     "power_draw_w": 30 + busy})
    files["telemetry"] = {"index": None, "engine": None, "metrics": None,
                          "device": {"kind": "nvidia-smi", "rows": rows,
                                     "source": "device: telemetry/nvidia-smi.csv"}}
    return files


def _iso(epoch_s: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
