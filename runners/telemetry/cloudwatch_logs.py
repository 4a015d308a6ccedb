"""A SageMaker endpoint's container log from CloudWatch Logs.

SageMaker writes each production variant's container output to the log group
`/aws/sagemaker/Endpoints/<endpoint name>`, one stream per instance
(`<variant>/<instance id>`) (SageMaker Developer Guide, "Log Amazon SageMaker AI events
with Amazon CloudWatch"). The group outlives the endpoint, so a run can read it after
teardown. FilterLogEvents reads across the group's streams; an answer carrying
`nextToken` has more to give, even when its `events` are empty (CloudWatch Logs API
Reference, FilterLogEvents). IAM: logs:FilterLogEvents on the log group.
"""

from __future__ import annotations

from typing import Any

LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints/"
PAGE_LIMIT = 10_000  # FilterLogEvents `limit`: 1..10,000 (botocore model EventsLimit)


class LogsUnavailable(RuntimeError):
    """The log group cannot be read (absent, or access denied): one line saying which."""


def log_group(endpoint_name: str) -> str:
    return LOG_GROUP_PREFIX + endpoint_name


def endpoint_log_lines(logs, endpoint_name: str, *, start_ms: int, end_ms: int | None = None,
                       max_lines: int = 10000) -> list[dict]:
    """The endpoint's log events from `start_ms` (epoch ms, e.g. the endpoint's creation)
    to `end_ms` (default: now), at most `max_lines`, oldest first:
    [{"timestamp_ms", "stream", "message"}]. `logs` is a boto3 CloudWatch Logs client.
    Raises LogsUnavailable when the group is absent or not readable."""
    from botocore.exceptions import ClientError

    group = log_group(endpoint_name)
    params: dict[str, Any] = {"logGroupName": group, "startTime": int(start_ms)}
    if end_ms is not None:
        params["endTime"] = int(end_ms)
    lines: list[dict] = []
    seen_tokens: set[str] = set()
    while len(lines) < max_lines:
        params["limit"] = min(PAGE_LIMIT, max_lines - len(lines))
        try:
            page = logs.filter_log_events(**params)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                raise LogsUnavailable(f"log group {group} does not exist (yet)") from None
            if code in ("AccessDeniedException", "AccessDenied"):
                raise LogsUnavailable(f"logs:FilterLogEvents on {group} denied") from None
            raise
        lines += [{"timestamp_ms": e["timestamp"], "stream": e.get("logStreamName"),
                   "message": e.get("message", "")} for e in page.get("events", [])]
        token = page.get("nextToken")
        if not token or token in seen_tokens:
            break
        seen_tokens.add(token)
        params["nextToken"] = token
    lines.sort(key=lambda e: e["timestamp_ms"])  # stable: a stream's order is kept
    return lines[:max_lines]
