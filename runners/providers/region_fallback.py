"""Place an experiment in the first region that has capacity, with any Provider.

Regions are tried in the experiment's order. Only a capacity failure moves on to the next
region; quota and fatal failures stop the run. Every refused attempt is recorded, and what
an attempt created is torn down before the next region is tried (DESIGN.md: provision).
Waits are bounded in count and time; a delete the provider cannot finish yet is retried
until a deadline and then reported, never dropped.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from runners.providers.base import Provider, ProvisionError


def wait_until_ready(provider: Provider, placement: dict[str, Any], *, timeout_s: float,
                     interval_s: float, sleep: Callable[[float], None] = time.sleep) -> dict:
    """poll_ready until ready or failed; at most timeout_s / interval_s + 1 looks. A timeout
    is a fatal failure (the caller tears down)."""
    looks = max(1, math.ceil(timeout_s / interval_s) + 1)
    for look in range(looks):
        outcome = provider.poll_ready(placement)
        placement = outcome["placement"]
        if outcome["state"] in ("ready", "failed"):
            return outcome
        if look < looks - 1:
            sleep(interval_s)
    error = ProvisionError(ProvisionError.FATAL,
                           f"{placement.get('region')}: not ready after {timeout_s:.0f} s",
                           {"region": placement.get("region"), "status": placement.get("status")})
    return {"state": "failed", "placement": placement, "error": error.to_dict()}


def teardown_until_settled(provider: Provider, placement: dict[str, Any], *, timeout_s: float,
                           interval_s: float,
                           sleep: Callable[[float], None] = time.sleep) -> dict:
    """teardown, retrying "retry-later" (e.g. an endpoint still Creating) every interval_s
    until timeout_s; the last answer is returned either way so the caller can report it."""
    tries = max(1, math.ceil(timeout_s / interval_s) + 1)
    result: dict = {}
    for attempt in range(tries):
        result = provider.teardown(placement)
        placement = result.get("placement", placement)
        if result["state"] != "retry-later":
            return result
        if attempt < tries - 1:
            sleep(interval_s)
    return result


class PlacementFailed(ProvisionError):
    """No region placed the experiment; `detail["refused"]` lists every attempt and
    `detail["pending_teardown"]` any placement whose delete has not gone through yet."""


def place(provider: Provider, run_id: str, regions: list[str] | tuple[str, ...], *,
          ready_timeout_s: float, poll_interval_s: float = 30.0,
          teardown_timeout_s: float = 3600.0, teardown_interval_s: float = 60.0,
          sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The ready placement (with `refused`: the attempts before it), or PlacementFailed."""
    refused: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for region in regions:
        placement = None
        try:
            placement = provider.provision(run_id, region)
            outcome = wait_until_ready(provider, placement, timeout_s=ready_timeout_s,
                                       interval_s=poll_interval_s, sleep=sleep)
        except ProvisionError as exc:
            placement = exc.detail.pop("placement", None) or placement
            outcome = {"state": "failed", "placement": placement, "error": exc.to_dict()}
        except BaseException as exc:
            # Ctrl-C or a bug mid-wait: what this region created still gets deleted.
            if placement is not None:
                result = provider.teardown(placement)
                if result["state"] != "deleted":
                    exc.add_note(f"{region}: {placement.get('endpoint_name') or placement} "
                                 f"not deleted yet ({result.get('reason', result['state'])})")
            raise
        if outcome["state"] == "ready":
            return {**outcome["placement"], "refused": refused}

        error = outcome["error"]
        attempt = {"region": region, "kind": error["kind"], "message": error["message"]}
        if outcome.get("placement") is not None:
            settled = teardown_until_settled(provider, outcome["placement"],
                                             timeout_s=teardown_timeout_s,
                                             interval_s=teardown_interval_s, sleep=sleep)
            final = settled.get("placement", outcome["placement"])
            attempt["teardown"] = settled["state"]
            attempt["timeline"] = final.get("timeline", [])
            if settled["state"] != "deleted":
                pending.append(final)
        refused.append(attempt)
        if error["kind"] != ProvisionError.CAPACITY:
            raise PlacementFailed(error["kind"], error["message"],
                                  {"refused": refused, "pending_teardown": pending})
    raise PlacementFailed(ProvisionError.CAPACITY,
                          f"no capacity in any region tried ({', '.join(regions)})",
                          {"refused": refused, "pending_teardown": pending})
