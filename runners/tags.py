"""The tags that let the watchdog find a billable resource and judge it (DESIGN.md: Tags).

Every billable resource a run creates carries `billable_tags()`:
- benchstack:managed=true      the watchdog considers it at all (never anything without it)
- benchstack:experiment        the experiment name
- benchstack:run-id            the run; the workflow also names its Step Functions execution
                               after it, so the execution ARN ends with ':<run-id>'
- benchstack:expires-at        ISO 8601 UTC; past it the watchdog deletes the resource
- benchstack:execution-arn     the Step Functions execution that owns the resource (when a
                               workflow runs it; absent for a laptop run): the watchdog reads
                               its status and deletes early once the execution has ended
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

MANAGED = "benchstack:managed"
EXPERIMENT = "benchstack:experiment"
RUN_ID = "benchstack:run-id"
EXPIRES_AT = "benchstack:expires-at"
EXECUTION_ARN = "benchstack:execution-arn"
# The longest an experiment may live (experiment.ttl_hours): an expires-at further than this
# from the resource's creation was not written by benchstack and is not trusted.
MAX_TTL_HOURS = 72.0


def expires_at(now: datetime, ttl_hours: float) -> str:
    """ISO 8601 UTC expiry, second precision: '2026-12-03T03:00:00Z'."""
    moment = (now.astimezone(timezone.utc) + timedelta(hours=ttl_hours)).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_expires_at(value: str) -> datetime:
    """The moment an `expires-at` tag names; ValueError unless it is ISO 8601 with a zone
    (a zone-less time is ambiguous, and guessing wrong deletes a live endpoint)."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except (AttributeError, ValueError):
        raise ValueError(f"{EXPIRES_AT}={value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise ValueError(f"{EXPIRES_AT}={value!r} has no time zone; expected e.g. "
                         "2026-12-03T03:00:00Z")
    return moment.astimezone(timezone.utc)


def billable_tags(experiment: str, run_id: str, now: datetime, ttl_hours: float,
                  execution_arn: str | None = None) -> dict[str, str]:
    """Every billable resource a run creates carries exactly these."""
    tags = {
        MANAGED: "true",
        EXPERIMENT: experiment,
        RUN_ID: run_id,
        EXPIRES_AT: expires_at(now, ttl_hours),
    }
    if execution_arn:
        tags[EXECUTION_ARN] = execution_arn
    return tags
