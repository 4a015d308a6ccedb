"""The local benchmark against the loopback server (progress per phase), a run's report,
and compare over the fixture runs, through an in-process MCP client session."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import anyio
import boto3
import pytest
from mcp import Client

from benchmarks.loopback_server import Truth

from benchstack_mcp.config import Config
from benchstack_mcp.server import build_server
from runners.backends import cancel
from runners.workflow import phases
from tests.mcp.client import call, error_text
from tests.runners.conftest import benchmark_plan, write_openai_experiment
from tests.runners.watchdog_fixtures import aws  # noqa: F401 - a pytest fixture

RUNS = Path(__file__).resolve().parents[1] / "cost" / "fixtures" / "runs"


@pytest.fixture
def config(tmp_path) -> Config:
    return Config(store=str(tmp_path / "store"), compare_dir=tmp_path / "compare")


def test_a_local_run_reports_each_phase_and_returns_its_summary(config, loopback, tmp_path,
                                                               aws):
    server = loopback()
    exp = write_openai_experiment(tmp_path, server.base_url)
    progress: list = []
    result = call(config, "run_local_benchmark", {"experiment_name": str(exp)}, progress)
    assert not result.is_error, result.content
    run = result.structured_content
    # the small plan has no context_lengths: that phase is skipped
    assert [p["state"] for p in run["phases"]] == [
        "skipped" if p == "context" else "done" for p in phases.PHASES]
    assert run["summary"]["schema"] == "benchstack.summary/1"
    assert run["summary"]["decode"]["tokens_per_s"] > 0
    assert Path(run["run_folder"], "report.md").is_file()
    # one notification per phase, numbered in phase order, out of the phase count
    assert [p[0] for p in progress] == list(range(1, len(phases.PHASES) + 1))
    assert {p[1] for p in progress} == {len(phases.PHASES)}
    assert [p[2].split(":")[0] for p in progress] == list(phases.PHASES)

    again = call(config, "run_report", {"run_folder": run["run_folder"]})
    assert not again.is_error, again.content
    assert again.structured_content["written"] == []  # the report phase wrote them all
    assert "summary.json" in again.structured_content["kept"]
    assert again.structured_content["markdown"].startswith("#")
    assert again.structured_content["summary"]["run_id"] == run["run_id"]

    # the same run as a cloud run's results folder in S3 (moto), without its report
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="results-1")
    folder = Path(run["run_folder"])
    for path in folder.rglob("*"):
        if path.is_file() and path.name not in ("summary.json", "report.md"):
            s3.upload_file(str(path), "results-1", f"runs/x/{path.relative_to(folder)}")
    cloud = call(config, "run_report", {"run_folder": "s3://results-1/runs/x/"})
    assert not cloud.is_error, cloud.content
    assert {"summary.json", "report.md"} <= set(cloud.structured_content["written"])
    assert cloud.structured_content["summary"]["run_id"] == run["run_id"]
    assert s3.head_object(Bucket="results-1", Key="runs/x/report.md")["ContentLength"] > 0


def test_cloud_experiments_are_refused_before_anything_starts(config):
    result = call(config, "run_local_benchmark", {"experiment_name": "e2b-bf16-ml-g6"})
    assert error_text(result).endswith("backend: 'sagemaker' runs in the cloud: use "
                                       "start_cloud_run")


def test_report_of_a_folder_that_is_no_run(config, tmp_path):
    result = call(config, "run_report", {"run_folder": str(tmp_path)})
    assert error_text(result).endswith(f"{tmp_path}: -: not a run folder (no manifest.json)")


def test_compare_returns_rows_sorted_in_code_as_structured_content(config, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    result = call(config, "compare_runs", {"run_folders": [str(runs)],
                                           "baseline": "e2b-emb4-ml-g6"})
    assert not result.is_error, result.content
    out = result.structured_content
    decode = [r["decode_tokens_per_s"] for r in out["rows"]]
    assert decode == [131.9, 130.4, 96.5, 36.5, 36.0, 34.9]
    assert [r["rank"] for r in out["rows"]] == [1, 2, 3, 4, 5, 6]
    assert out["baseline"] == "20261102T110000Z-d4e5f6"
    baseline = next(r for r in out["rows"] if r["run_id"] == out["baseline"])
    assert baseline["x_decode"] == pytest.approx(1.0)
    assert Path(out["markdown_path"]).read_text() == out["markdown"]
    assert Path(out["csv_path"]).parent.parent == config.compare_dir
    # the same folder twice: nothing is overwritten, and the refusal is one line
    twice = call(config, "compare_runs", {"run_folders": [str(runs)],
                                          "out_dir": str(Path(out["csv_path"]).parent)})
    assert error_text(twice).endswith("compare.md: exists; give another output folder")
    missing = call(config, "compare_runs", {"run_folders": [str(tmp_path / "nope")]})
    assert error_text(missing).endswith("nope: no such run folder")


def test_compare_groups_repeated_runs_and_lists_a_failed_run_apart(config, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    (g6_summary,) = (runs / "2026-11-02-e2b-emb4-g6").rglob("summary.json")
    again = g6_summary.parent.parent / "20261102T130000Z-ffffff"
    again.mkdir()
    summary = json.loads(g6_summary.read_text())
    summary["run_id"] = again.name
    summary["decode"]["tokens_per_s"] = 129.9
    (again / "summary.json").write_text(json.dumps(summary))
    (bedrock,) = (runs / "2026-11-02-nova-micro-bedrock").rglob("summary.json")
    failed = json.loads(bedrock.read_text())
    failed["phases"] = {"provision": {"state": "failed", "detail": "AccessDeniedException"}}
    bedrock.write_text(json.dumps(failed))
    out = call(config, "compare_runs", {"run_folders": [str(runs)]}).structured_content
    g6 = next(r for r in out["rows"] if r["experiment"] == "e2b-emb4-g6")
    assert g6["n_runs"] == 2 and sorted(g6["run_ids"]) == ["20261102T100000Z-a1b2c3",
                                                            "20261102T130000Z-ffffff"]
    assert g6["decode_tokens_per_s"] == pytest.approx((131.9 + 129.9) / 2)  # the median
    (apart,) = out["apart"]
    assert apart["experiment"] == "nova-micro-bedrock"
    assert apart["failure"] == "provision failed: AccessDeniedException"
    assert "nova-micro-bedrock" not in {r["experiment"] for r in out["rows"]}


def test_cancelling_the_call_cuts_the_requests_and_still_tears_down(config, loopback,
                                                                    tmp_path):
    # 2 s of decoding per load request: uncancelled, the load phase alone takes a minute
    server = loopback(Truth(ttft_s=0.01, gap_s=0.0625))
    exp = write_openai_experiment(tmp_path, server.base_url, plan=benchmark_plan(
        decode_lengths=[4, 8], decode_repeats=1, stream_requests=1, stream_tokens=4,
        concurrency=[1], load_tokens=32, load_batches=30, toolcall_runs=1))

    async def go():
        entered_load = anyio.Event()

        async def on_progress(done, total, message):
            if message.startswith("load"):
                entered_load.set()

        started = time.monotonic()
        async with Client(build_server(config)) as client:
            async with anyio.create_task_group() as tg:
                async def run():
                    await client.call_tool("run_local_benchmark",
                                           {"experiment_name": str(exp)},
                                           progress_callback=on_progress)
                tg.start_soon(run)
                await entered_load.wait()
                await anyio.sleep(0.5)
                tg.cancel_scope.cancel()
        return time.monotonic() - started

    seconds = anyio.run(go)
    assert seconds < 30
    (folder,) = (Path(config.store) / "runs").glob("*/*")
    assert (folder / "teardown.json").is_file() and (folder / "report.md").is_file()
    load = json.loads((folder / "load.json").read_text())
    assert "cancelled: the MCP client cancelled the call" in json.dumps(load)
    assert not cancel.cancelled()  # the server's later requests are sent again
