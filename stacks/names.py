"""Stable, readable stack names and SSM parameter names (DESIGN.md: data flow)."""

from __future__ import annotations

PREFIX = "Benchstack"
SSM_ROOT = "/benchstack"


def foundation(region: str) -> str:
    return f"{PREFIX}-Foundation-{region}"


def experiment(name: str, region: str) -> str:
    return f"{PREFIX}-Exp-{name}-{region}"


def watchdog() -> str:
    """One watchdog for the account; it sweeps every region from its home region."""
    return f"{PREFIX}-Watchdog"


def foundation_parameter(key: str) -> str:
    """SSM parameter a later stack or a runner reads, e.g. /benchstack/foundation/vpc-id."""
    return f"{SSM_ROOT}/foundation/{key}"


def experiment_parameter(name: str) -> str:
    return f"{SSM_ROOT}/experiments/{name}"
