"""The cloud side: start a run, its status, what bills now, tearing a run down, the
watchdog's sweep, the newest vLLM SageMaker image, and an endpoint's engine log."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from benchstack_mcp.config import Config
from benchstack_mcp.errors import tool_errors
from benchstack_mcp.hints import hints
from benchstack_mcp.shapes import pick
from runners import experiment
from runners.providers.sagemaker import dlc_images, names
from runners.telemetry import cloudwatch_logs, engine_log
from runners.watchdog import sweep as watchdog
from runners.watchdog import teardown
from runners.watchdog.cli import parse_regions
from runners.watchdog.clients import Clients
from runners.workflow import start, status


class StartedRun(BaseModel):
    execution_arn: str
    status: str
    region: str
    results: str  # s3://bucket/runs/<date>-<experiment>/<run-id>/ (give it to run_report)


class RunStatus(BaseModel):
    execution_arn: str
    region: str
    status: str  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT | ABORTED | PENDING_REDRIVE
    run_id: str | None
    started_at: str | None
    stopped_at: str | None
    current_state: str | None  # the state entered last, while RUNNING
    current_phase: str | None  # that state when it is a phase
    phases_written: list[str]  # phases whose results are in S3, in phase order
    results: str | None
    continued_in: str | None  # the execution that took the run to another region
    error: str | None
    cause: str | None


class SweepLine(BaseModel):
    region: str
    kind: str
    id: str
    state: str
    action: str  # deleted | would-delete | deferred | kept | refused | error
    reason: str
    attention: bool
    experiment: str | None
    run_id: str | None
    expires_at: str | None


class Sweep(BaseModel):
    sweep_id: str
    dry_run: bool
    regions: list[str]
    counts: dict[str, int]
    resources: list[SweepLine]
    seconds: float


class TeardownLine(BaseModel):
    region: str
    kind: str
    id: str
    state: str
    action: str  # stopped | deleted | deferred | kept | refused | error
    reason: str


class Teardown(BaseModel):
    run_id: str
    regions: list[str]
    lines: list[TeardownLine]
    complete: bool  # every resource of the run deleted (or already deleting)


class DlcImage(BaseModel):
    region: str
    tag: str
    image_uri: str  # what sagemaker.image_tag selects in that region
    digest: str | None
    pushed_at: str | None
    sagemaker_tags_seen: int


class LogLine(BaseModel):
    timestamp_ms: int
    stream: str | None  # <variant>/<instance id>
    message: str


class EngineLog(BaseModel):
    endpoint_name: str
    region: str
    log_group: str
    since_ms: int
    available: bool
    note: str | None  # why there is no log: no group yet means no container yet
    lines_read: int
    lines: list[LogLine]  # the newest `tail` of them, oldest first
    facts: dict[str, Any] | None  # what the engine said at start-up (telemetry/engine_log)


def register(server: MCPServer, config: Config) -> None:
    def clients() -> Clients:
        found = Clients(config.session())
        if found.session.get_credentials() is None:
            raise ToolError("no AWS credentials found (set AWS_PROFILE or run `aws configure`)")
        return found

    def regions_of(given: list[str] | None) -> tuple[str, ...]:
        return parse_regions(",".join(given)) if given else watchdog.DEFAULT_REGIONS

    def sweep(given: list[str] | None, dry_run: bool) -> Sweep:
        report = watchdog.sweep(regions_of(given), clients=clients(), dry_run=dry_run)
        return Sweep(sweep_id=report.sweep_id, dry_run=dry_run, regions=list(report.regions),
                     counts=report.counts(), seconds=round(report.seconds, 3),
                     resources=[SweepLine(**pick(SweepLine, line)) for line in report.lines])

    @server.tool(name="start_cloud_run", annotations=hints(
        "Start a cloud run", read_only=False, destructive=False, idempotent=False,
        open_world=True))
    @tool_errors
    def start_cloud_run(experiment_name: str, region: str | None = None) -> StartedRun:
        """Start a benchmark run of a deployed sagemaker, ec2 or bedrock experiment in its
        region's Step Functions workflow (default region: the experiment's first; its
        other regions are the fallbacks). Places billable capacity until the run's
        teardown; every call starts a new run. Poll run_status with the execution ARN."""
        exp = config.experiment(experiment_name)
        if exp.backend not in experiment.CLOUD_BACKENDS:
            raise experiment.ExperimentError(exp.source, "backend", f"{exp.backend!r} runs "
                                             "locally: use run_local_benchmark")
        region = region or exp.regions[0]
        if region not in exp.regions:
            raise experiment.ExperimentError(exp.source, "regions", f"{region!r} is not one "
                                             f"of {', '.join(exp.regions)}")
        return StartedRun(**start.start_run(exp.name, region, session=config.session()))

    @server.tool(name="run_status", annotations=hints(
        "Run status", read_only=True, destructive=False, idempotent=True, open_world=True))
    @tool_errors
    def run_status(execution_arn: str) -> RunStatus:
        """A cloud run's Step Functions execution: status, the phase running now, the
        phases whose results are written, and where the results are."""
        return RunStatus(**status.run_status(execution_arn, session=config.session()))

    @server.tool(name="billing_now", annotations=hints(
        "List what bills now", read_only=True, destructive=False, idempotent=True,
        open_world=True))
    @tool_errors
    def billing_now(regions: list[str] | None = None) -> Sweep:
        """Every benchstack-tagged SageMaker endpoint, config, model, EC2 fleet and instance
        in the regions (default us-east-1, us-east-2, us-west-2), each with what the
        watchdog would do to it now (would-delete, kept, deferred) and why. The
        watchdog's dry run: deletes nothing."""
        return sweep(regions, dry_run=True)

    @server.tool(name="watchdog_sweep", annotations=hints(
        "Run the watchdog sweep", read_only=False, destructive=True,
        # what a sweep deletes depends on the clock: a later call may find more expired
        idempotent=False, open_world=True))
    @tool_errors
    def watchdog_sweep(regions: list[str] | None = None) -> Sweep:
        """The scheduled watchdog's sweep, now: deletes every benchstack-tagged resource
        whose expires-at passed or whose run's execution ended. Untagged resources are
        never touched; one that refuses deletion is reported and the sweep goes on."""
        return sweep(regions, dry_run=False)

    @server.tool(name="teardown_run", annotations=hints(
        "Tear down a run", read_only=False, destructive=True,
        # a second call finds nothing more of the run to delete
        idempotent=True, open_world=True))
    @tool_errors
    def teardown_run(run_id: str, regions: list[str] | None = None) -> Teardown:
        """Stop one run now, whatever its expiry: stops its execution if still running,
        then deletes every resource tagged with its run id in the regions (default
        us-east-1, us-east-2, us-west-2). An endpoint still Creating is reported
        deferred: call again once it is InService or Failed."""
        chosen = regions_of(regions)
        lines = [TeardownLine(**line)
                 for line in teardown.teardown_run(run_id, chosen, clients=clients())]
        left = [line for line in lines if line.kind != "stepfunctions-execution"
                and line.action not in ("deleted", "kept")]
        return Teardown(run_id=run_id, regions=list(chosen), lines=lines, complete=not left)

    @server.tool(name="find_vllm_image", annotations=hints(
        "Find the vLLM SageMaker image", read_only=True, destructive=False,
        idempotent=True, open_world=True))
    @tool_errors
    def find_vllm_image(region: str) -> DlcImage:
        """The newest pinned SageMaker release of the AWS vLLM Deep Learning Container in
        the region (ECR DescribeImages on the DLC registry), chosen by version numbers,
        not push date. Its tag is what an experiment's sagemaker.image_tag takes."""
        ecr = config.session().client("ecr", region_name=region)
        return DlcImage(**dlc_images.latest_sagemaker_image(ecr, region))

    @server.tool(name="engine_log", annotations=hints(
        "Read an endpoint's engine log", read_only=True, destructive=False,
        idempotent=True, open_world=True))
    @tool_errors
    def engine_log_tool(region: str | None = None, endpoint_name: str | None = None,
                        experiment_name: str | None = None, run_id: str | None = None,
                        minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 60,
                        tail: Annotated[int, Field(ge=1, le=2000)] = 100) -> EngineLog:
        """The newest lines of a SageMaker endpoint's container log (vLLM start-up, model
        download, errors) from the last `minutes`, and the facts the engine stated (KV
        cache tokens, weights GiB, ready time). Name the endpoint, or the experiment and
        the run id that created it (region: the experiment's first). No log group yet
        is an answer: SageMaker is still waiting for an instance, so no container runs."""
        exp = config.experiment(experiment_name) if experiment_name else None
        if not endpoint_name:
            if not (exp and run_id):
                raise ToolError("give endpoint_name, or experiment_name and run_id")
            endpoint_name = names.endpoint_name(exp.name, run_id)
        region = region or (exp.regions[0] if exp and exp.regions else None)
        if not region:
            raise ToolError("give region (or experiment_name, for its first region)")
        since_ms = int(time.time() * 1000) - minutes * 60_000
        logs = config.session().client("logs", region_name=region)
        found = dict(endpoint_name=endpoint_name, region=region, since_ms=since_ms,
                     log_group=cloudwatch_logs.log_group(endpoint_name))
        try:
            read = cloudwatch_logs.endpoint_log_lines(logs, endpoint_name, start_ms=since_ms)
        except cloudwatch_logs.LogsUnavailable as exc:
            return EngineLog(**found, available=False, note=str(exc), lines_read=0, lines=[],
                             facts=None)
        facts = engine_log.parse(read, f"CloudWatch Logs {found['log_group']}") if read else None
        return EngineLog(**found, available=True, note=None if read else
                         f"no log lines in the last {minutes} minutes", lines_read=len(read),
                         lines=[LogLine(**line) for line in read[-tail:]], facts=facts)
