"""SLO goodput: per request, per level, per phase."""

from runners.backends.reply import ERROR, Reply
from runners.experiment import Slo
from runners.measure import slo
from runners.measure.load.level import output_tokens


def reply(ttft_s, e2el_s, tokens=11, status="ok"):
    return Reply(status=status, send_s=0.0, first_s=ttft_s, last_s=e2el_s,
                 completion_tokens=tokens, chunk_s=[ttft_s, e2el_s])


def test_a_request_is_good_only_when_every_bound_holds_and_it_succeeded():
    bounds = Slo(ttft_ms=100, tpot_ms=10)
    assert slo.good(reply(0.05, 0.15), 11, bounds)  # TPOT = 100 ms / 10 = 10 ms
    assert not slo.good(reply(0.05, 0.16), 11, bounds)  # TPOT 11 ms
    assert not slo.good(reply(0.11, 0.12), 11, bounds)  # TTFT 110 ms
    assert not slo.good(reply(0.01, 0.02, status=ERROR), 11, bounds)


def test_level_holds_when_the_percentile_share_is_good_failures_counting_against():
    bounds = Slo(ttft_ms=100, percentile=90)
    replies = [reply(0.05, 0.1)] * 9 + [reply(0.2, 0.3)]
    block = slo.level_block(replies, 2.0, bounds, output_tokens)
    assert (block["share_meeting"], block["met"], block["holds"]) == (0.9, 9, True)
    assert block["goodput_requests_per_s"] == 4.5
    assert block["bounds"]["ttft_ms"]["bound"] == 100
    failing = [reply(0.05, 0.1)] * 8 + [reply(0.01, 0.02, status=ERROR)] * 2
    assert slo.level_block(failing, 2.0, bounds, output_tokens)["holds"] is False
    assert slo.level_block(replies, 2.0, None, output_tokens) is None


def test_phase_block_names_the_highest_rate_holding():
    levels = [{"target_rate": 1, "slo": {"holds": True}}, {"target_rate": 2, "slo": {"holds": True}},
              {"target_rate": 4, "slo": {"holds": False}}]
    block = slo.phase_block(levels, Slo(e2el_ms=2000, percentile=99))
    assert block["highest_rate_holding"] == 2 and block["levels_holding"] == 2
    assert block["description"] == "E2EL p99 <= 2000 ms"
