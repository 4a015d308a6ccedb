"""UTC timestamps as every record writes them: ISO 8601 to the second with a Z."""

from __future__ import annotations

import datetime as dt
import time


def utc_from_epoch(epoch_s: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def utc_now() -> str:
    return utc_from_epoch(time.time())
