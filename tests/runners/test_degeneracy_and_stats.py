import pytest

from runners.measure import stats
from runners.measure import toolcall_check
from runners.measure.degeneracy import degenerate_reason


@pytest.mark.parametrize("text", ["The The The The The The The The The The",
                                  "I am here. I am here. I am here. I am here. I am here.",
                                  "", "   ", "!" * 50])
def test_degenerate_replies_are_caught(text):
    assert degenerate_reason(text) is not None


@pytest.mark.parametrize("text", ["1512", "Canberra",
                                  "The keeper climbed the stairs at dusk, lit the lamp, and "
                                  "watched the ships pass the rocks below the tower.",
                                  "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12"])
def test_normal_replies_pass(text):
    assert degenerate_reason(text) is None


def test_tool_call_without_text_is_not_empty():
    assert degenerate_reason("", [{"name": "count_ids"}]) is None


def test_percentiles_interpolate_like_numpy():
    values = [1.0, 2.0, 3.0, 4.0]
    assert stats.percentile(values, 50) == 2.5
    assert stats.percentile(values, 90) == pytest.approx(3.7)
    d = stats.distribution(values)
    assert d["mean"] == 2.5 and d["n"] == 4
    assert stats.distribution([]) is None


def test_decode_fit_cancels_the_fixed_cost():
    # 100 tokens/s plus 0.2 s per call: t = 0.2 + n / 100
    rate, intercept = stats.decode_fit(16, 512, [0.36, 0.36, 0.37], [5.32, 5.32, 5.30])
    assert rate == pytest.approx(496 / (5.32 - 0.36))
    assert intercept == pytest.approx(0.36 - 16 / rate)
    with pytest.raises(ValueError):
        stats.decode_fit(16, 512, [1.0], [0.5])


def test_toolcall_grading():
    assert toolcall_check.EXPECTED == 8
    assert toolcall_check.filter_ok('{"op": ">=", "value": 10}')
    assert toolcall_check.filter_ok({"op": ">", "value": 9})
    assert not toolcall_check.filter_ok('{"op": ">", "value": 10}')  # drops id 10
    assert not toolcall_check.filter_ok("not json")
    assert toolcall_check.answer_correct("There are 11 ids; 8 of them are 10 or more: 8")
    assert not toolcall_check.answer_correct("8 ids, no wait, 7")
    assert toolcall_check.run_tool('{"op": ">=", "value": 10}') == '{"count": 8}'
