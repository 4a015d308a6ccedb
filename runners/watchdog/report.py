"""What a sweep leaves behind: JSON-lines audit (S3 or a local file), CloudWatch counts,
and one SNS alert per sweep when something needs a person."""

from __future__ import annotations

import json
from typing import IO

from runners.watchdog.sweep import SweepReport

NAMESPACE = "Benchstack/Watchdog"
METRIC = "Resources"
SUBJECT_LIMIT = 100  # characters SNS accepts in a subject


def audit_key(report: SweepReport) -> str:
    """watchdog/<date>/<sweep-id>.jsonl in the results bucket."""
    return f"watchdog/{report.started_at:%Y-%m-%d}/{report.sweep_id}.jsonl"


def audit_jsonl(report: SweepReport) -> str:
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in report.lines)


def write_audit(report: SweepReport, out: IO[str]) -> None:
    out.write(audit_jsonl(report))


def metric_data(report: SweepReport) -> list[dict]:
    """One count per action, zeros included, so an alarm on 'refused' sees 0, not silence."""
    return [{"MetricName": METRIC, "Dimensions": [{"Name": "Action", "Value": action}],
             "Value": count, "Unit": "Count", "Timestamp": report.started_at}
            for action, count in report.counts().items()]


def summary(report: SweepReport) -> str:
    counts = ", ".join(f"{n} {action}" for action, n in report.counts().items() if n)
    mode = " (dry run)" if report.dry_run else ""
    return (f"watchdog sweep {report.sweep_id}{mode}: {len(report.lines)} tagged resources in "
            f"{len(report.regions)} regions: {counts or 'nothing found'} "
            f"in {report.seconds:.1f} s")


def alert_message(report: SweepReport) -> tuple[str, str] | None:
    """(subject, body) when any resource needs a person, else None."""
    lines = report.needing_attention()
    if not lines:
        return None
    subject = f"benchstack watchdog: {len(lines)} resource(s) need attention"
    body = [summary(report), ""]
    body += [f"{line['region']} {line['kind']} {line['id']} [{line['state']}]: "
             f"{line['action']}: {line['reason']}" for line in lines]
    return subject[:SUBJECT_LIMIT], "\n".join(body)


def publish(report: SweepReport, *, clients, region: str, bucket: str | None,
            topic_arn: str | None) -> None:
    """Audit to S3, counts to CloudWatch, alert to SNS. Each is tried even if another
    fails; the first failure is raised afterwards so the Lambda reports an error."""
    failures: list[Exception] = []

    def attempt(step) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - the other outputs still go out
            failures.append(exc)

    if bucket:
        attempt(lambda: clients.get("s3", region).put_object(
            Bucket=bucket, Key=audit_key(report), Body=audit_jsonl(report).encode(),
            ContentType="application/x-ndjson"))
    attempt(lambda: clients.get("cloudwatch", region).put_metric_data(
        Namespace=NAMESPACE, MetricData=metric_data(report)))
    message = alert_message(report)
    if topic_arn and message:
        subject, body = message
        attempt(lambda: clients.get("sns", region).publish(
            TopicArn=topic_arn, Subject=subject, Message=body))
    if failures:
        raise failures[0]

