"""The watchdog's Lambda entry point: configuration from the environment WatchdogStack
sets, one sweep, then the audit, metrics and alert."""

from __future__ import annotations

import os
import time

from runners import sdk

# Refuse to start on an SDK that would drop fields quietly, before anything imports it.
sdk.require_botocore()

from runners.watchdog import report as watchdog_report  # noqa: E402
from runners.watchdog import sweep as watchdog  # noqa: E402
from runners.watchdog.clients import Clients  # noqa: E402

TIMEOUT_S = 300  # WatchdogStack's Lambda timeout: a third of the 15-minute schedule
REPORT_MARGIN_S = 30  # Lambda time kept back for writing the audit, metrics and alert


def config_from_env(env: dict[str, str]) -> dict:
    regions = tuple(r.strip() for r in env.get("WATCHDOG_REGIONS", "").split(",") if r.strip())
    return {
        "regions": regions or watchdog.DEFAULT_REGIONS,
        "dry_run": env.get("WATCHDOG_DRY_RUN", "false").lower() == "true",
        "bucket": env.get("RESULTS_BUCKET") or None,
        "topic_arn": env.get("ALERTS_TOPIC_ARN") or None,
    }


def handler(event, context):
    """Scheduled sweep. {"dry_run": true} in the event forces a report-only sweep; an
    event can never turn a configured dry run into a deleting one."""
    config = config_from_env(dict(os.environ))
    dry_run = config["dry_run"] or (isinstance(event, dict) and event.get("dry_run") is True)
    deadline = None
    if hasattr(context, "get_remaining_time_in_millis"):
        deadline = (time.monotonic() + context.get_remaining_time_in_millis() / 1000
                    - REPORT_MARGIN_S)
    clients = Clients()
    report = watchdog.sweep(config["regions"], clients=clients, dry_run=dry_run,
                            deadline=deadline)
    home = clients.session.region_name or config["regions"][0]
    print(watchdog_report.summary(report))
    watchdog_report.publish(report, clients=clients, region=home, bucket=config["bucket"],
                            topic_arn=config["topic_arn"])
    return {"sweep_id": report.sweep_id, "counts": report.counts(),
            "seconds": round(report.seconds, 3)}
