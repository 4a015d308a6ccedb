"""The watchdog never trusts an expires-at further than the schema's maximum TTL from the
resource's creation (issue 15: 9999-12-31 was accepted, so the resource never expired)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from runners import experiment, tags
from runners.watchdog.inventory import Resource
from runners.watchdog.sweep import judge

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)


def endpoint(expires_at: str, created_at: datetime | None) -> Resource:
    return Resource("us-east-1", "sagemaker-endpoint", "e", "InService",
                    {tags.MANAGED: "true", tags.EXPIRES_AT: expires_at}, created_at)


def live(_tags):
    return "RUNNING"


def test_the_watchdog_limit_is_the_schemas():
    base = {"name": "xx", "backend": "local", "model": {"id": "m", "served_name": "m",
                                                         "build": "b", "precision": "int4"}}
    assert experiment.parse({**base, "ttl_hours": tags.MAX_TTL_HOURS}, "x").ttl_hours == 72
    with pytest.raises(experiment.ExperimentError, match="out of range"):
        experiment.parse({**base, "ttl_hours": tags.MAX_TTL_HOURS + 1}, "x")


def test_a_far_expiry_is_judged_by_creation_plus_the_maximum_ttl():
    created = NOW - timedelta(hours=73)
    verdict = judge(endpoint("9999-12-31T00:00:00Z", created), "steady", NOW, live)
    assert verdict.decision == "delete" and verdict.attention
    assert verdict.reason.startswith("benchstack:expires-at 9999-12-31T00:00:00Z is ")
    assert "beyond the 72 h maximum TTL; judged by creation + 72 h: expired 1.00 h ago" \
        in verdict.reason


def test_a_far_expiry_on_a_young_resource_is_kept_but_flagged():
    verdict = judge(endpoint("9999-12-31T00:00:00Z", NOW - timedelta(hours=2)), "steady",
                    NOW, live)
    assert verdict.decision == "kept" and verdict.attention
    assert "beyond the 72 h maximum TTL" in verdict.reason and "expires in 70.00 h" in \
        verdict.reason


def test_a_far_expiry_without_a_creation_time_is_for_a_person():
    verdict = judge(endpoint("2027-06-01T00:00:00Z", None), "steady", NOW, live)
    assert verdict.decision == "kept" and verdict.attention
    assert "after now, beyond the 72 h maximum TTL" in verdict.reason
    assert "a person must decide" in verdict.reason


def test_an_expiry_within_the_maximum_is_trusted_as_before():
    created = NOW - timedelta(hours=10)
    verdict = judge(endpoint((created + timedelta(hours=72)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                             created), "steady", NOW, live)
    assert verdict.decision == "kept" and not verdict.attention
    assert verdict.reason.startswith("expires in 62.00 h")
