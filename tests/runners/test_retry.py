"""Throttling is retried with capped, jittered backoff; nothing else is."""

import pytest
from botocore.exceptions import ClientError

from runners.providers import retry


def _error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, "DescribeEndpoint")


class Flaky:
    def __init__(self, failures: list[str]):
        self.failures, self.calls = list(failures), 0

    def __call__(self):
        self.calls += 1
        if self.failures:
            raise _error(self.failures.pop(0))
        return "ok"


def test_throttling_is_retried_with_full_jitter_backoff():
    sleeps = []
    call = Flaky(["ThrottlingException", "TooManyRequestsException", "Throttling"])
    assert retry.retry_throttled(call, sleep=sleeps.append, rand=lambda: 0.5, base_s=1.0,
                                 cap_s=3.0) == "ok"
    assert call.calls == 4
    assert sleeps == [0.5, 1.0, 1.5]  # half of min(cap, base * 2**attempt)


def test_jitter_stays_inside_the_backoff_window():
    for attempt in range(8):
        for fraction in (0.0, 0.3, 0.999):
            delay = retry.backoff_delay_s(attempt, 0.5, 20.0, lambda: fraction)
            assert 0.0 <= delay < min(20.0, 0.5 * 2 ** attempt)


def test_the_last_throttling_error_is_raised_when_attempts_run_out():
    call = Flaky(["ThrottlingException"] * 5)
    with pytest.raises(ClientError) as caught:
        retry.retry_throttled(call, attempts=3, sleep=lambda s: None)
    assert retry.error_code(caught.value) == "ThrottlingException"
    assert call.calls == 3


@pytest.mark.parametrize("code", ["ValidationException", "ResourceLimitExceeded",
                                  "AccessDeniedException"])
def test_other_errors_are_answers_and_raise_at_once(code):
    call = Flaky([code])
    with pytest.raises(ClientError):
        retry.retry_throttled(call, sleep=lambda s: pytest.fail("must not sleep"))
    assert call.calls == 1


def test_non_aws_errors_have_no_code():
    assert retry.error_code(ValueError("x")) == ""
    assert not retry.is_throttling(ValueError("x"))
