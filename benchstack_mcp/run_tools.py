"""Runs on this machine and their results: the local benchmark (progress notifications
per phase), a run's summary and report, and the compare table across runs."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from benchstack_mcp.config import Config
from benchstack_mcp.errors import tool_errors
from benchstack_mcp.hints import hints
from benchstack_mcp.shapes import pick
from runners import experiment, progress
from runners.backends import cancel
from runners.results import compare, report
from runners.results.store import LocalStore, ResultsStore, S3Store, open_store
from runners.workflow import phases

# Backends whose benchmark runs here without placing anything that bills by the hour;
# cloud backends go through start_cloud_run, where the watchdog and teardown cover them.
LOCAL_BACKENDS = ("local", "openai")
PROGRESS_POLL_S = 0.2


class PhaseResult(BaseModel):
    phase: str
    state: str  # done | failed | skipped
    error: str | None = None


class LocalRun(BaseModel):
    run_id: str
    experiment: str
    run_folder: str
    phases: list[PhaseResult]
    interrupted: bool
    store_fallback: str | None  # why the run went on in a local folder, when it did
    no_success: list[dict[str, Any]]  # measuring phases without one good reply
    summary: dict[str, Any] | None  # summary.json (docs/results-format.md)


class RunReport(BaseModel):
    run_folder: str
    summary: dict[str, Any]
    markdown: str  # report.md
    written: list[str]  # files this call wrote (nothing is overwritten)
    kept: list[str]  # files already there, left as first written


class CompareRow(BaseModel):
    """One experiment: a single run, or the medians of its repeated runs (n_runs)."""

    rank: int  # 1 = fastest single-request decode (ties: cheaper per token first)
    run_id: str  # the latest run of the experiment
    run_ids: list[str]
    n_runs: int
    experiment: str
    label: str
    backend: str
    precision: str
    decode_tokens_per_s: float | None
    decode_interval_95: list[float] | None
    best_load_tokens_per_s: float | None
    ttft_p50_s: float | None
    tpot_p50_s: float | None
    roofline_share: float | None
    usd_per_hour: float | None
    usd_per_million_one_request: float | None
    usd_per_million_highest: float | None
    highest_concurrency: int | None
    toolcalls: str | None
    quality: str | None
    quality_interval_95: str | None
    token_source: str | None
    billable_minutes: float | None
    billable_usd: float | None
    break_even_tokens_per_s: float | None
    x_decode: float | None  # ratio to the baseline run
    x_usd_one_request: float | None
    x_usd_highest: float | None
    path: str


class FailedRun(BaseModel):
    run_id: str
    experiment: str
    label: str
    failure: str  # its first failed phase, or "measured nothing"
    path: str


class Comparison(BaseModel):
    baseline: str | None  # run id; None when no run measured anything
    rows: list[CompareRow]  # sorted in code: runners/results/compare.py sort_key
    apart: list[FailedRun]  # listed apart, never ranked
    markdown: str
    markdown_path: str
    csv_path: str
    charts: list[str]
    charts_skipped: str | None


def experiment_file(config: Config, name_or_file: str) -> Path:
    """A name in the experiments folder, or a .toml path (validated now, in one line)."""
    path = Path(name_or_file)
    if path.suffix == ".toml":
        experiment.load(path)
        return path
    return Path(config.experiment(name_or_file).source)


def run_store(config: Config, run_folder: str) -> ResultsStore:
    """A run folder here, or s3://bucket/prefix/ of a cloud run."""
    if run_folder.startswith("s3://"):
        bucket, _, prefix = run_folder[5:].partition("/")
        return S3Store(bucket, prefix, client=config.session().client("s3"))
    if not (Path(run_folder) / "manifest.json").is_file():
        raise experiment.ExperimentError(run_folder, "-", "not a run folder (no manifest.json)")
    return LocalStore(run_folder)


async def _forward(events: queue.SimpleQueue, ctx: Context, seen: list[str]) -> None:
    """One progress notification per phase entered: (phase number, phase count, what)."""
    while True:
        try:
            event = events.get_nowait()
        except queue.Empty:
            return
        name = event["phase"]
        if seen and seen[-1] == name:
            continue
        seen.append(name)
        index = phases.PHASES.index(name) + 1 if name in phases.PHASES else len(seen)
        text = f"{name}: {event['message']}" if event["message"] else name
        await ctx.report_progress(index, len(phases.PHASES), text)


def register(server: MCPServer, config: Config) -> None:
    one_at_a_time = anyio.Lock()  # progress listeners are process-wide

    @server.tool(name="run_local_benchmark", annotations=hints(
        "Run the benchmark locally", read_only=False, destructive=False, idempotent=False,
        open_world=True))
    @tool_errors
    async def run_local_benchmark(experiment_name: str, ctx: Context) -> LocalRun:
        """Run every phase the cloud workflow runs, provision through teardown and
        report, of a `local` experiment (llama.cpp on 127.0.0.1) or an `openai` one (an
        OpenAI-compatible server someone else runs), by name or .toml path. Sends a progress notification as each phase starts; writes a new run folder
        (nothing is overwritten). Cancelling the call cuts the requests in flight and
        still tears down. Cloud experiments: use start_cloud_run."""
        from runners.workflow import driver  # the phases' dependencies, only when running

        path = experiment_file(config, experiment_name)
        exp = experiment.load(path)
        if exp.backend not in LOCAL_BACKENDS:
            raise experiment.ExperimentError(str(path), "backend", f"{exp.backend!r} runs in "
                                             "the cloud: use start_cloud_run")
        if one_at_a_time.locked():
            raise ToolError("a local benchmark is already running; wait for it to finish")
        async with one_at_a_time:
            events: queue.SimpleQueue = queue.SimpleQueue()
            box: dict[str, Any] = {}
            finished = anyio.Event()

            async def work() -> None:
                try:
                    box["outcome"] = await anyio.to_thread.run_sync(
                        driver.run_experiment, str(path), config.store)
                except Exception as exc:  # re-raised below, outside the task group
                    box["error"] = exc
                finished.set()

            stop = progress.listen(events.put)
            seen: list[str] = []
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(work)
                    try:
                        while not finished.is_set():
                            await _forward(events, ctx, seen)
                            with anyio.move_on_after(PROGRESS_POLL_S):
                                await finished.wait()
                    except anyio.get_cancelled_exc_class():
                        # The caller gave up: refuse and cut the requests, as Ctrl-C
                        # would; the worker then runs teardown and report and ends.
                        cancel.cancel("the MCP client cancelled the call")
                        raise
                    await _forward(events, ctx, seen)
            finally:
                stop()
                # The worker has ended (the task group waited for it): later calls in
                # this server (query_backend, model_health) must not find it cancelled.
                cancel.reset()
        if "error" in box:
            raise box["error"]
        outcome = box["outcome"]
        context = outcome["context"]
        store = open_store(context["store"])  # a folder, or s3:// with --store s3://...
        return LocalRun(
            run_id=context["run_id"], experiment=context["experiment"],
            run_folder=store.uri(context["run_prefix"]),
            phases=[PhaseResult(phase=r["phase"], state=r["state"], error=r.get("error"))
                    for r in outcome["results"]],
            interrupted=outcome["interrupted"], store_fallback=outcome["store_fallback"],
            no_success=outcome["no_success"],
            summary=store.get_json_or_none(context["run_prefix"] + "summary.json"))

    @server.tool(name="run_report", annotations=hints(
        "Get a run's summary and report", read_only=False, destructive=False,
        idempotent=True, open_world=True))
    @tool_errors
    def run_report(run_folder: str) -> RunReport:
        """summary.json and report.md of a run: a local run folder, or the s3:// results
        folder start_cloud_run returned. Writes whichever of them is missing (the run's
        report phase would have); never overwrites one."""
        out = report.write_report(run_store(config, run_folder), "")
        return RunReport(run_folder=run_folder, summary=out["summary"],
                         markdown=out["markdown"], written=out["written"], kept=out["kept"])

    @server.tool(name="compare_runs", annotations=hints(
        "Compare runs", read_only=False, destructive=False, idempotent=False,
        open_world=False))
    @tool_errors
    def compare_runs(run_folders: list[str], baseline: str | None = None,
                     out_dir: str | None = None) -> Comparison:
        """One table across runs (folders, or folders holding runs): decode tokens/s,
        share of the memory-bandwidth roofline, $ per 1M output tokens at one request and
        at the highest concurrency, tool calls, quality, billable minutes, and each row's
        ratio to `baseline` (run id, experiment or folder name; default: the fastest).
        Rows come sorted in code, fastest first. Writes compare.md, compare.csv and charts
        to a new folder (default: runs/compare/<UTC time>)."""
        where = Path(out_dir) if out_dir else (
            config.compare_dir / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        out = compare.compare(run_folders, baseline, where)
        rows = [CompareRow(rank=i, run_ids=[run["run_id"] for run in r["runs"]],
                           **pick(CompareRow, r))
                for i, r in enumerate(out["rows"], start=1)]
        return Comparison(baseline=out["baseline"], rows=rows,
                          apart=[FailedRun(**pick(FailedRun, r)) for r in out["apart"]],
                          markdown=out["markdown"].read_text(encoding="utf-8"),
                          markdown_path=str(out["markdown"]), csv_path=str(out["csv"]),
                          charts=[str(p) for p in out["charts"]],
                          charts_skipped=out["charts_skipped"])
