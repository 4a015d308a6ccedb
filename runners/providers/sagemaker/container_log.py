"""What the endpoint's container log says while SageMaker polls it.

While the endpoint is Creating: when the container first answered SageMaker's `/ping`
health check with 200 (an endpoint once sat 3 h 26 min in Creating while vLLM served from
its 10th minute). At InService: the engine's start-up facts (weights, KV cache, load and
compile times), read once and kept with the placement as a small dict.

Log reads never fail a run: an unreadable log is recorded as "no engine log: <why>".
The log is read at most every CHECK_EVERY_S while Creating, to stay far below
FilterLogEvents' per-account request rate.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from runners.telemetry import engine_log
from runners.telemetry.cloudwatch_logs import LogsUnavailable, endpoint_log_lines, log_group

CHECK_EVERY_S = 30
# The whole run's log at teardown: /ping every 5 s, a stats line every 10 s and one access
# line per request come to about 1,500 lines an hour before the load phases add theirs.
COLLECT_MAX_LINES = 100_000
# The endpoint is created just after the provision phase's clock starts; a minute of slack
# covers clock skew between the client and CloudWatch.
SLACK_MS = 60_000
ISO = "%Y-%m-%dT%H:%M:%SZ"


def _ms(text: str) -> int:
    moment = datetime.strptime(text, ISO).replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime(ISO)


def _read(logs, placement: dict[str, Any], start_ms: int,
          max_lines: int = 10_000) -> list[dict] | str:
    try:
        return endpoint_log_lines(logs, placement["endpoint_name"], start_ms=start_ms,
                                  max_lines=max_lines)
    except LogsUnavailable as exc:
        return f"no engine log: {exc}"
    except Exception as exc:  # noqa: BLE001 - a log read must not stop the run
        return f"no engine log: FilterLogEvents on {log_group(placement['endpoint_name'])}: {exc}"


def _mark_healthy(placement: dict[str, Any], at_ms: int, group: str) -> None:
    placement["container_healthy_at"] = _iso(at_ms)
    placement.setdefault("timeline", []).append({
        "event": "container_healthy", "at": _iso(at_ms),
        "source": f"CloudWatch Logs {group}: first \"GET /ping\" answered 200"})


def first_ping_ms(lines: list[dict]) -> int | None:
    for event in lines:
        for part in str(event["message"]).splitlines():
            m = engine_log.ACCESS.match(engine_log.split_line(0, part).message)
            if m and m["path"] == "/ping" and m["status"] == "200":
                return event["timestamp_ms"]
    return None


def check_health(logs, placement: dict[str, Any], now: datetime) -> None:
    """While Creating: look (every CHECK_EVERY_S) for the first /ping answered 200."""
    if placement.get("container_healthy_at"):
        return
    last = placement.get("log_checked_at")
    if last and now - datetime.strptime(last, ISO).replace(tzinfo=timezone.utc) < timedelta(
            seconds=CHECK_EVERY_S):
        return
    placement["log_checked_at"] = now.strftime(ISO)
    lines = _read(logs, placement, _ms(placement["provision_started_at"]) - SLACK_MS)
    if isinstance(lines, str):
        placement["container_log"] = lines
        return
    at_ms = first_ping_ms(lines)
    if at_ms is not None:
        _mark_healthy(placement, at_ms, log_group(placement["endpoint_name"]))


def read_facts(logs, placement: dict[str, Any]) -> None:
    """At InService: the engine's start-up facts, and container health if not yet seen."""
    group = log_group(placement["endpoint_name"])
    lines = _read(logs, placement, _ms(placement["provision_started_at"]) - SLACK_MS)
    if isinstance(lines, str):
        placement["engine_facts"] = {"engine": None, "source": None, "missing": lines}
        return
    facts = engine_log.parse(lines, f"engine log: CloudWatch Logs {group}")
    facts["stats"] = engine_log.stats_summary(facts["stats"])
    if not facts["engine"]:
        facts["missing"] = (f"no engine log: {len(lines)} lines in {group}, none from vLLM in "
                            "a known format")
    placement["engine_facts"] = facts
    if not placement.get("container_healthy_at") and (at_ms := first_ping_ms(lines)):
        _mark_healthy(placement, at_ms, group)


def healthy_note(placement: dict[str, Any], now: datetime) -> str:
    """A sentence for the Creating alert: since when the container has been healthy."""
    at = placement.get("container_healthy_at")
    if not at:
        return (placement.get("container_log") or
                "The container log shows no /ping answered 200 yet.")
    since = datetime.strptime(at, ISO).replace(tzinfo=timezone.utc)
    minutes = (now - since).total_seconds() / 60
    return (f"Its container has answered SageMaker's /ping with 200 since {at} "
            f"({minutes:.0f} min): the model server is up, the endpoint is not yet InService.")


def collect(logs, cloudwatch, placement: dict[str, Any], start_s: float,
            end_s: float) -> dict[str, Any]:
    """After teardown (both survive the endpoint): the container log since creation as
    JSON lines of events, and the endpoint's CloudWatch metrics over the run's window."""
    import json

    from runners.providers.sagemaker import names
    from runners.telemetry import cloudwatch_metrics

    files: dict[str, bytes] = {}
    missing: dict[str, str] = {}
    endpoint = placement.get("endpoint_name")
    if not endpoint or not placement.get("provision_started_at"):
        return {"files": {}, "missing": {"engine-log.jsonl": "no endpoint was created"},
                "location": None}
    lines = _read(logs, placement, _ms(placement["provision_started_at"]) - SLACK_MS,
                  max_lines=COLLECT_MAX_LINES)
    if isinstance(lines, str):
        missing["engine-log.jsonl"] = lines
    else:
        files["engine-log.jsonl"] = "".join(json.dumps(e) + "\n" for e in lines).encode()
    try:
        found = cloudwatch_metrics.endpoint_metrics(cloudwatch, endpoint, names.VARIANT_NAME,
                                                    start_s=start_s, end_s=end_s)
        files["cloudwatch-metrics.json"] = (json.dumps(found, indent=1) + "\n").encode()
    except Exception as exc:  # noqa: BLE001 - recorded; teardown has already happened
        missing["cloudwatch-metrics.json"] = f"GetMetricData for {endpoint}: {exc}"
    return {"files": files, "missing": missing, "location": log_group(endpoint)}
