"""Experiments: list, validate (a file, a name or TOML text), the EC2 boot script,
preflight against the Hugging Face Hub, and doctor."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from benchstack_mcp.config import Config
from benchstack_mcp.errors import tool_errors
from benchstack_mcp.hints import hints
from runners import experiment
from runners.checks import doctor as doctor_checks
from runners.checks import preflight as preflight_check
from runners.providers.ec2.user_data import EngineLaunch, launch_values_file, render


class ExperimentInfo(BaseModel):
    name: str
    backend: str
    model_id: str
    build: str
    precision: str
    regions: list[str]
    instance_types: list[str]
    description: str


class ExperimentList(BaseModel):
    experiments: list[ExperimentInfo]
    invalid: list[str]  # one line per file that fails validation


class Validation(BaseModel):
    valid: bool
    source: str
    backend: str | None = None
    error: str | None = None  # "<file>: <field>: <what is allowed>"
    experiment: dict[str, Any] | None = None  # the validated snapshot


class BootScript(BaseModel):
    experiment: str
    instance_type: str
    cache_bucket: str
    script: str
    launch_values: str  # /etc/benchstack/launch.env, which the script carries as base64


class PreflightReport(BaseModel):
    experiment: str
    model: str
    tensors: int
    weights_bytes: int
    quant_method: str | None
    ignore_list: str
    memory: dict[str, Any]  # instance type, weights and KV GiB, usable GiB, assumptions


class DoctorCheck(BaseModel):
    name: str
    status: Literal["ok", "fail", "warn", "skip"]
    message: str  # the one line, including what to do


class DoctorReport(BaseModel):
    experiment: str | None  # None: the account and the region's shared stacks only
    region: str | None  # None: every region of the experiment
    ready: bool  # no check failed
    counts: dict[str, int]
    checks: list[DoctorCheck]


def info(exp: experiment.Experiment) -> ExperimentInfo:
    return ExperimentInfo(name=exp.name, backend=exp.backend, model_id=exp.model.id,
                          build=exp.model.build, precision=exp.model.precision,
                          regions=list(exp.regions), instance_types=list(exp.instance_types),
                          description=exp.description)


def validate_text(text: str, source: str) -> experiment.Experiment:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise experiment.ExperimentError(source, "-", f"not valid TOML: {exc}") from None
    return experiment.parse(data, source)


def register(server: MCPServer, config: Config) -> None:
    @server.tool(name="list_experiments", annotations=hints(
        "List experiments", read_only=True, destructive=False, idempotent=True,
        open_world=False))
    @tool_errors
    def list_experiments() -> ExperimentList:
        """Every experiment in the experiments folder: backend, model build, regions,
        instance types. Files that fail validation are listed under `invalid`."""
        found, invalid = [], []
        for path in experiment.experiment_files(config.experiments_dir):
            try:
                found.append(info(experiment.load(path)))
            except experiment.ExperimentError as exc:
                invalid.append(str(exc))
        return ExperimentList(experiments=found, invalid=invalid)

    @server.tool(name="validate_experiment", annotations=hints(
        "Validate an experiment", read_only=True, destructive=False, idempotent=True,
        open_world=False))
    @tool_errors
    def validate_experiment(name: str | None = None, file: str | None = None,
                            text: str | None = None) -> Validation:
        """Validate one experiment, given as exactly one of: `name` (in the experiments
        folder), `file` (a .toml path) or `text` (TOML). An invalid experiment is an answer,
        not a failure: valid=false with the one-line error naming file, field and what is
        allowed."""
        given = [k for k, v in (("name", name), ("file", file), ("text", text)) if v]
        if len(given) != 1:
            raise ToolError("give exactly one of name, file or text"
                            + (f" (got {', '.join(given)})" if given else ""))
        source = ("<text>" if text else file if file
                  else str(Path(config.experiments_dir) / f"{name}.toml"))
        try:
            exp = (validate_text(text, source) if text else experiment.load(file) if file
                   else config.experiment(name))
        except experiment.ExperimentError as exc:
            return Validation(valid=False, source=source, error=str(exc))
        return Validation(valid=True, source=source, backend=exp.backend,
                          experiment=exp.to_dict())

    @server.tool(name="show_ec2_boot_script", annotations=hints(
        "Show an EC2 boot script", read_only=True, destructive=False, idempotent=True,
        open_world=False))
    @tool_errors
    def show_ec2_boot_script(experiment_name: str, instance_type: str | None = None,
                             cache_bucket: str = "CACHE-BUCKET") -> BootScript:
        """The user-data script an ec2 experiment's launch template boots with (engine
        container, weights cache, health wait), for `instance_type` (default: the
        experiment's first), and the launch values it carries (image, engine arguments,
        ports) in readable form. Deploy fills in the real cache bucket."""
        exp = config.experiment(experiment_name)
        if exp.ec2 is None:
            raise experiment.ExperimentError(exp.source, "backend", f"{exp.backend!r}; a boot "
                                             "script is for backend 'ec2'")
        itype = instance_type or exp.ec2.instance_types[0]
        if itype not in exp.ec2.instance_types:
            raise experiment.ExperimentError(exp.source, "ec2.instance_types", f"{itype!r} is "
                                             f"not one of {', '.join(exp.ec2.instance_types)}")
        launch = EngineLaunch(exp, itype, cache_bucket)
        return BootScript(experiment=exp.name, instance_type=itype, cache_bucket=cache_bucket,
                          script=render(launch), launch_values=launch_values_file(launch))

    @server.tool(name="preflight", annotations=hints(
        "Preflight a vLLM experiment", read_only=True, destructive=False, idempotent=True,
        open_world=True))
    @tool_errors
    def preflight(experiment_name: str) -> PreflightReport:
        """Check a SageMaker or EC2 vLLM experiment before anything bills: the model's
        config and safetensors headers from the Hugging Face Hub (no weights downloaded),
        the quantization ignore list, and whether weights plus KV cache fit the first
        instance type. Fails with the one check that failed."""
        exp = config.experiment(experiment_name)
        report = preflight_check.run(exp)
        return PreflightReport(experiment=exp.name, **report)

    @server.tool(name="doctor", annotations=hints(
        "Is the account ready", read_only=True, destructive=False, idempotent=True,
        open_world=True))
    @tool_errors
    def doctor(experiment_name: str | None = None, region: str | None = None) -> DoctorReport:
        """Is this AWS account ready to run the experiment, before anything bills: the
        credentials, the CDK bootstrap, the foundation, benchmark and experiment stacks,
        free quota for every instance type, the engine image, the AMI, the model on the
        Hub, Bedrock access and the watchdog, in `region` (default: every region of the
        experiment). One line per check: ok, or fail/warn with what to do. Without an
        experiment, the account and the region's shared stacks only."""
        exp = config.experiment(experiment_name) if experiment_name else None
        checks = [DoctorCheck(**check.to_dict()) for check in
                  doctor_checks.run_checks(exp, region, session=config.session())]
        counts = {status: sum(c.status == status for c in checks)
                  for status in ("ok", "fail", "warn", "skip")}
        return DoctorReport(experiment=exp.name if exp else None, region=region,
                            ready=counts["fail"] == 0, counts=counts, checks=checks)
