"""Stable, readable stack names and SSM parameter names (DESIGN.md: data flow)."""

from __future__ import annotations

from runners.ec2_fleet import LAUNCH_TEMPLATES_PARAMETER

PREFIX = "Benchstack"
SSM_ROOT = "/benchstack"


def foundation(region: str) -> str:
    return f"{PREFIX}-Foundation-{region}"


def experiment(name: str, region: str) -> str:
    return f"{PREFIX}-Exp-{name}-{region}"


def foundation_parameter(key: str) -> str:
    """SSM parameter a later stack or a runner reads, e.g. /benchstack/foundation/vpc-id."""
    return f"{SSM_ROOT}/foundation/{key}"


def experiment_parameter(name: str) -> str:
    return f"{SSM_ROOT}/experiments/{name}"


def ec2_launch_templates_parameter(name: str) -> str:
    """JSON {instance type: launch template id} of an EC2 experiment, in each of its regions;
    the EC2 provider reads it (the name is defined beside the runner, which has no CDK)."""
    return LAUNCH_TEMPLATES_PARAMETER.format(experiment=name)
