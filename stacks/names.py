"""Stable, readable stack names and SSM parameter names (DESIGN.md: data flow)."""

from __future__ import annotations

from runners.providers.ec2.fleet import LAUNCH_TEMPLATES_PARAMETER
# The runners read the same parameters in Lambda, where only runners/ is deployed.
from runners.workflow.execution import SSM_ROOT, experiment_parameter, foundation_parameter  # noqa: F401

PREFIX = "Benchstack"


def foundation(region: str) -> str:
    return f"{PREFIX}-Foundation-{region}"


def experiment(name: str, region: str) -> str:
    return f"{PREFIX}-Exp-{name}-{region}"


def ec2_launch_templates_parameter(name: str) -> str:
    """JSON {instance type: launch template id} of an EC2 experiment, in each of its regions;
    the EC2 provider reads it (the name is defined beside the runner, which has no CDK)."""
    return LAUNCH_TEMPLATES_PARAMETER.format(experiment=name)


def watchdog() -> str:
    """One watchdog for the account; it sweeps every region from its home region."""
    return f"{PREFIX}-Watchdog"


def benchmark(region: str) -> str:
    return f"{PREFIX}-Benchmark-{region}"
