"""The tags that let the watchdog find a billable resource and judge it (DESIGN.md: Tags)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

MANAGED = "benchstack:managed"
EXPERIMENT = "benchstack:experiment"
RUN_ID = "benchstack:run-id"
EXPIRES_AT = "benchstack:expires-at"


def expires_at(now: datetime, ttl_hours: float) -> str:
    """ISO 8601 UTC expiry, second precision: '2026-12-03T03:00:00Z'."""
    moment = (now.astimezone(timezone.utc) + timedelta(hours=ttl_hours)).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def billable_tags(experiment: str, run_id: str, now: datetime, ttl_hours: float) -> dict[str, str]:
    """Every billable resource a run creates carries exactly these."""
    return {
        MANAGED: "true",
        EXPERIMENT: experiment,
        RUN_ID: run_id,
        EXPIRES_AT: expires_at(now, ttl_hours),
    }
