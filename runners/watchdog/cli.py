"""`python -m runners watchdog [--dry-run] [--regions ...]`: the Lambda's sweep, from a
laptop, with the caller's AWS credentials. The audit goes to stdout or --audit FILE, the
summary to stderr; no metrics or alerts are sent from a laptop."""

from __future__ import annotations

import argparse
import sys

from botocore.exceptions import BotoCoreError

from runners import regions as known_regions
from runners.watchdog import report as watchdog_report
from runners.watchdog import sweep as watchdog
from runners.watchdog.clients import Clients


class UsageError(ValueError):
    """A bad argument or a missing prerequisite: printed as one line, exit 2."""


def parse_regions(text: str | None) -> tuple[str, ...]:
    if text is None:
        return watchdog.DEFAULT_REGIONS
    chosen = tuple(r.strip() for r in text.split(",") if r.strip())
    if not chosen:
        raise UsageError("--regions: empty; give e.g. us-east-1,us-west-2")
    unknown = [r for r in chosen if r not in known_regions.KNOWN]
    if unknown:
        raise UsageError(f"--regions: {', '.join(unknown)} not known; known: "
                         f"{', '.join(known_regions.KNOWN)}")
    return chosen


def run(args: argparse.Namespace) -> int:
    try:
        regions = parse_regions(args.regions)
        clients = Clients()
        if clients.session.get_credentials() is None:
            raise UsageError("no AWS credentials found (set AWS_PROFILE or run "
                             "`aws configure`); the watchdog needs read access to sweep")
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BotoCoreError as exc:  # a profile that does not exist, a broken config file
        print(f"error: AWS configuration: {exc}", file=sys.stderr)
        return 2
    report = watchdog.sweep(regions, clients=clients, dry_run=args.dry_run,
                            parallel=not args.sequential)
    if args.audit:
        args.audit.parent.mkdir(parents=True, exist_ok=True)
        with args.audit.open("w", encoding="utf-8") as out:
            watchdog_report.write_audit(report, out)
    else:
        watchdog_report.write_audit(report, sys.stdout)
    print(watchdog_report.summary(report), file=sys.stderr)
    for line in report.needing_attention():
        print(f"attention: {line['region']} {line['kind']} {line['id']}: {line['action']}: "
              f"{line['reason']}", file=sys.stderr)
    counts = report.counts()
    return 1 if counts["refused"] or counts["error"] else 0
