"""Stable, readable stack names and SSM parameter names (DESIGN.md: data flow)."""

from __future__ import annotations

# The runners read the same parameters in Lambda, where only runners/ is deployed.
from runners.workflow import SSM_ROOT, experiment_parameter, foundation_parameter  # noqa: F401

PREFIX = "Benchstack"


def foundation(region: str) -> str:
    return f"{PREFIX}-Foundation-{region}"


def experiment(name: str, region: str) -> str:
    return f"{PREFIX}-Exp-{name}-{region}"


def benchmark(region: str) -> str:
    return f"{PREFIX}-Benchmark-{region}"
