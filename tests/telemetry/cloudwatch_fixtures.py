"""FilterLogEvents answers as CloudWatch Logs returns them, built from the fixture log
(each line's CloudWatch timestamp and stream become the event's)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path

import botocore.session
from botocore.stub import Stubber

FIXTURES = Path(__file__).with_name("fixtures")


def events_from_log(name: str = "vllm-sagemaker-cloudwatch.log") -> list[dict]:
    events = []
    for n, line in enumerate((FIXTURES / name).read_text().splitlines()):
        stamp, stream, message = line.split(" ", 2)
        ms = int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
        events.append({"logStreamName": stream, "timestamp": ms, "message": message,
                       "ingestionTime": ms + 800, "eventId": f"{ms}{n:04d}"})
    return events


def pages(events: list[dict], size: int) -> list[dict]:
    """FilterLogEvents pages of `size` events; every page but the last carries nextToken,
    and an empty page with a token comes first, as a search over idle streams gives."""
    out = [{"events": [], "searchedLogStreams": [], "nextToken": "tok-0"}]
    for i in range(0, len(events), size):
        page = {"events": events[i:i + size],
                "searchedLogStreams": [{"logStreamName": events[0]["logStreamName"],
                                        "searchedCompletely": i + size >= len(events)}]}
        if i + size < len(events):
            page["nextToken"] = f"tok-{i + size}"
        out.append(page)
    return out


@contextlib.contextmanager
def stubbed(service: str):
    """A botocore client for `service` behind a Stubber that must use every response."""
    client = botocore.session.get_session().create_client(
        service, region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()
