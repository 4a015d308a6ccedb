"""The teardown watchdog: finds every resource tagged benchstack:managed=true in the
configured regions and deletes those that expired or whose run ended (DESIGN.md: the
watchdog guarantees the meter stops even when the workflow dies).

Rules, in order, for each tagged resource:
0. owned by a CloudFormation stack (aws:cloudformation:*) -> kept, flagged: the stack owns it
1. already deleting (Deleting, deleted fleet)            -> kept, left alone
2. expires-at missing or unreadable                      -> kept, flagged for a person
   expires-at more than MAX_TTL_HOURS after creation      -> flagged, never trusted: judged
      (or after now, when the creation time is unknown)      by creation + MAX_TTL_HOURS,
                                                             kept when that is unknown
3. expired, or its execution ended                       -> delete
   otherwise (not expired, run live or unknown)          -> kept
4. to delete but Creating/Updating (refuses deletion)    -> deferred, alerted, next sweep
5. a config or model whose run still has an endpoint     -> kept until the endpoint goes
A failed delete is "refused" and the sweep goes on; nothing untagged is ever listed.

Runs in Lambda (runners/watchdog/lambda_handler.py) and on a laptop (`python -m runners watchdog`):
the same code either way.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Iterable

from runners import tags
from runners.watchdog.clients import Clients
from runners.watchdog.inventory import (DELETING, ENDPOINTS, KINDS, TRANSITIONAL, Resource)
from runners.watchdog.runs import ENDED, RunStatus, StepFunctionsRuns

DEFAULT_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
ACTIONS = ("deleted", "would-delete", "deferred", "kept", "refused", "error")
CLOUDFORMATION_STACK = "aws:cloudformation:stack-name"  # CloudFormation adds it itself


@dataclass(frozen=True)
class Verdict:
    decision: str  # "delete" | "deferred" | "kept"
    reason: str
    attention: bool = False  # a person should look (bad tags, stuck in a transition)


def hours_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / 3600


def judge(resource: Resource, phase: str, now: datetime, run_status: RunStatus) -> Verdict:
    """Rules 0-4 of the module docstring, for one resource. Pure but for `run_status`,
    which is asked only when the expiry alone does not decide."""
    stack = resource.tags.get(CLOUDFORMATION_STACK)
    if stack:
        # tagged managed by mistake: deleting it under CloudFormation would break the stack
        return Verdict("kept", f"owned by CloudFormation stack {stack}; never deleted here",
                       True)
    if phase == DELETING:
        return Verdict("kept", f"already {resource.state}")
    raw = resource.tags.get(tags.EXPIRES_AT)
    if raw is None:
        return Verdict("kept", f"no {tags.EXPIRES_AT} tag; a person must decide", True)
    try:
        expiry = tags.parse_expires_at(raw)
    except ValueError as exc:
        return Verdict("kept", f"{exc}; a person must decide", True)
    distrust = _untrusted_expiry(resource, expiry, now)
    if distrust and resource.created_at is None:
        return Verdict("kept", f"{distrust}; no creation time to judge by, a person must "
                               "decide", True)
    if distrust:
        expiry = resource.created_at.astimezone(timezone.utc) + \
            timedelta(hours=tags.MAX_TTL_HOURS)
    if now >= expiry:
        why = f"expired {hours_between(expiry, now):.2f} h ago"
    else:
        status = run_status(resource.tags)
        if status not in ENDED:
            kept = (f"expires in {hours_between(now, expiry):.2f} h; "
                    f"run {status or 'has no execution to check'}")
            return Verdict("kept", f"{distrust}; judged by creation + "
                                   f"{tags.MAX_TTL_HOURS:g} h: {kept}" if distrust else kept,
                           bool(distrust))
        why = f"run ended: execution {status}"
    if distrust:
        why = f"{distrust}; judged by creation + {tags.MAX_TTL_HOURS:g} h: {why}"
    if phase == TRANSITIONAL:
        held = (f" for {hours_between(resource.created_at, now):.2f} h"
                if resource.created_at else "")
        return Verdict("deferred", f"{why}; {resource.state}{held}, which refuses deletion; "
                                   "deleted by a later sweep", True)
    return Verdict("delete", why, bool(distrust))


def _untrusted_expiry(resource: Resource, expiry: datetime, now: datetime) -> str | None:
    """Why `expiry` cannot have been written by benchstack, or None. Every run's expiry is
    at most MAX_TTL_HOURS after the resource was created, hence after now too."""
    since = resource.created_at.astimezone(timezone.utc) if resource.created_at else now
    if hours_between(since, expiry) > tags.MAX_TTL_HOURS:
        origin = "its creation" if resource.created_at else "now"
        return (f"{tags.EXPIRES_AT} {expiry:%Y-%m-%dT%H:%M:%SZ} is "
                f"{hours_between(since, expiry):.0f} h after {origin}, beyond the "
                f"{tags.MAX_TTL_HOURS:g} h maximum TTL")
    return None


@dataclass
class SweepReport:
    sweep_id: str
    started_at: datetime
    regions: tuple[str, ...]
    dry_run: bool
    lines: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        counted = {action: 0 for action in ACTIONS}
        for line in self.lines:
            counted[line["action"]] += 1
        return counted

    def needing_attention(self) -> list[dict]:
        return [line for line in self.lines
                if line["attention"] or line["action"] in ("refused", "error")]


def _line(report_id: str, now: datetime, resource: Resource, action: str, reason: str,
          attention: bool, dry_run: bool) -> dict:
    return {
        "sweep_id": report_id, "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": resource.region, "kind": resource.kind, "id": resource.id,
        "arn": resource.arn, "state": resource.state, "action": action, "reason": reason,
        "attention": attention, "dry_run": dry_run,
        "experiment": resource.tags.get(tags.EXPERIMENT),
        "run_id": resource.tags.get(tags.RUN_ID),
        "expires_at": resource.tags.get(tags.EXPIRES_AT),
    }


def _error_line(report_id: str, now: datetime, region: str, kind: str, exc: Exception,
                dry_run: bool) -> dict:
    failed = Resource(region=region, kind=kind, id="*", state="-")
    return _line(report_id, now, failed, "error", f"listing failed: {_describe(exc)}",
                 True, dry_run)


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def sweep_region(region: str, *, clients, sweep_id: str, now: datetime,
                 run_status: RunStatus, dry_run: bool, deadline: float | None) -> list[dict]:
    """Every kind in one region, in dependency order. One resource's failure (or one kind's
    listing failure) becomes an audit line; the sweep goes on."""
    lines: list[dict] = []
    surviving_runs: set[str] = set()  # runs that still have an endpoint in this region
    for kind in KINDS:
        client = clients.get(kind.service, region)
        try:
            for resource in kind.find(client, region):
                action, reason, attention = _settle(kind, client, resource, now, run_status,
                                                    dry_run, deadline, surviving_runs)
                run_id = resource.tags.get(tags.RUN_ID)
                if kind is ENDPOINTS and run_id and action not in ("deleted", "would-delete"):
                    surviving_runs.add(run_id)
                lines.append(_line(sweep_id, now, resource, action, reason, attention,
                                   dry_run))
        except Exception as exc:  # noqa: BLE001 - one kind failing must not stop the rest
            lines.append(_error_line(sweep_id, now, region, kind.name, exc, dry_run))
    return lines


def _settle(kind, client, resource: Resource, now: datetime, run_status: RunStatus,
            dry_run: bool, deadline: float | None, surviving_runs: set[str]):
    """(action, reason, attention) for one resource, deleting it when the verdict says so."""
    if resource.problem:
        return "error", resource.problem, True
    try:
        verdict = judge(resource, kind.phase(resource.state), now, run_status)
    except Exception as exc:  # noqa: BLE001 - a bad resource must not stop the sweep
        return "error", f"judging failed: {_describe(exc)}", True
    if verdict.decision != "delete":
        return verdict.decision, verdict.reason, verdict.attention
    if kind.follows_endpoints and resource.tags.get(tags.RUN_ID) in surviving_runs:
        return "kept", f"{verdict.reason}; an endpoint of its run still exists", False
    if dry_run:
        return "would-delete", verdict.reason, verdict.attention
    if deadline is not None and time.monotonic() >= deadline:
        return "deferred", f"{verdict.reason}; sweep out of time, next sweep deletes it", True
    try:
        kind.delete(client, resource)
    except Exception as exc:  # noqa: BLE001 - refused here, retried by the next sweep
        return "refused", f"{verdict.reason}; delete failed: {_describe(exc)}", True
    return "deleted", verdict.reason, verdict.attention


def new_sweep_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def sweep(regions: Iterable[str] = DEFAULT_REGIONS, *, clients: Clients | None = None,
          run_status: RunStatus | None = None, dry_run: bool = False,
          now: datetime | None = None, parallel: bool = True,
          deadline: float | None = None) -> SweepReport:
    """One sweep of every region; regions run in parallel threads unless `parallel=False`.
    `deadline` (time.monotonic) stops new deletes so the report is still written."""
    clients = clients or Clients()
    run_status = run_status or StepFunctionsRuns(clients)
    now = now or datetime.now(timezone.utc)
    regions = tuple(dict.fromkeys(regions))
    report = SweepReport(new_sweep_id(now), now, regions, dry_run)
    started = time.monotonic()

    def one(region: str) -> list[dict]:
        return sweep_region(region, clients=clients, sweep_id=report.sweep_id, now=now,
                            run_status=run_status, dry_run=dry_run, deadline=deadline)

    if parallel and len(regions) > 1:
        with ThreadPoolExecutor(max_workers=len(regions),
                                thread_name_prefix="watchdog") as pool:
            per_region = list(pool.map(one, regions))
    else:
        per_region = [one(region) for region in regions]
    report.lines = [line for lines in per_region for line in lines]
    report.seconds = time.monotonic() - started
    return report
