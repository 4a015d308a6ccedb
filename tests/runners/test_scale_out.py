"""Scale-out arithmetic: which levels split, how the shards share one schedule, and the
merge of shard files into one level."""

import time

import pytest

from runners.backends.reply import Reply
from runners.experiment import parse
from runners.measure.load import rate, scale_out
from tests.unit.test_experiment_schema import SAGEMAKER, with_


def plan(**values):
    """A rate plan; a value of None leaves the field out."""
    base = {"load_mode": "rate", "rates": [2.0, 10.0, 30.0], "runner_max_rate": 8.0,
            "load_duration_s": 20.0, "load_warmup_s": 2.0, "load_cooldown_s": 2.0,
            "arrival": "constant"}
    fields = {k: v for k, v in {**base, **values}.items() if v is not None}
    return parse(with_(SAGEMAKER, "benchmark", fields), "x").benchmark


def test_levels_above_one_runner_split_and_share_one_start_per_level():
    out = scale_out.plan(plan(), now_epoch=1000.0)
    assert out["enabled"] is True
    by_level = {}
    for item in out["items"]:
        by_level.setdefault(item["level"], []).append(item)
    assert sorted(by_level) == [1, 2]  # 2/s fits one runner
    assert [i["shard"] for i in by_level[2]] == [0, 1, 2, 3] and by_level[2][0]["shards"] == 4
    starts = {lvl: {i["start_epoch"] for i in items} for lvl, items in by_level.items()}
    assert starts == {1: {1000.0 + scale_out.LEAD_S},
                      2: {1000.0 + scale_out.LEAD_S + 20.0 + scale_out.GAP_S}}


def test_no_scale_out_without_a_runner_limit_or_with_a_sweep():
    assert scale_out.plan(plan(runner_max_rate=None), 0)["enabled"] is False
    assert scale_out.plan(plan(sweep=True, runner_max_rate=None), 0)["enabled"] is False


def test_a_plan_longer_than_one_invocation_is_refused():
    with pytest.raises(ValueError, match="more than one runner invocation"):
        # 4 x 190 s fits one load phase, but not with the shards' lead and gaps
        scale_out.plan(plan(rates=[10.0, 12.0, 14.0, 16.0], load_duration_s=190.0), 0)


def test_more_shards_than_a_map_runs_at_once_are_refused():
    with pytest.raises(ValueError, match="runs 40 at once"):
        scale_out.plan(plan(rates=[400.0], runner_max_rate=8.0), 0)


def test_shards_interleave_the_single_schedule():
    p = plan(arrival="poisson")
    whole = rate.arrival_offsets_s(30.0, p.load_duration_s, "poisson", 1.0, p.seed + 2)
    parts = [scale_out.shard_offsets_s(p, 2, 30.0, k, 4) for k in range(4)]
    assert sorted(x for part in parts for x in part) == whole


def test_merge_reads_shards_on_the_epoch_axis():
    p = plan()
    start = time.time()
    files = []
    for k in range(2):
        replies = [Reply(intended_s=t, send_s=t, first_s=t + 0.05, last_s=t + 0.1,
                         chunk_s=[t + 0.05, t + 0.1], completion_tokens=2, prompt_tokens=10)
                   for t in (start - scale_out.WALL_OFFSET_S + 3.0 + k * 0.1 + i
                             for i in range(14))]
        files.append({"start_epoch": start, "scheduled": 14,
                      "replies": [scale_out.reply_times(r) for r in replies]})
    level = scale_out.merge(p, 1, 10.0, files)
    assert level["shards"] == 2 and level["scheduled"] == 28
    # 16 s window; sends 3.0..16.1 s in: 13 + 14 fall from 2 s to 18 s
    assert level["requests"] == 28 and level["cut_requests"] == 0
    assert level["sent_per_s"] == pytest.approx(28 / 16)
    assert level["ttft_s"]["p50"] == pytest.approx(0.05, abs=1e-3)
