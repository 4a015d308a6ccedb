"""Cost arithmetic: pure functions, units in every name.

A dedicated instance bills by the hour whether it is busy or not; Bedrock bills by the
token. Everything here turns one into the other so both land on one scale:
US dollars per million output tokens.
"""

from __future__ import annotations

from datetime import datetime

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000
# AWS prices a month as 730 hours (8,760 hours a year / 12); the seed's $588/month for a
# g6 at $0.8048/h is this figure rounded.
HOURS_PER_MONTH = 730
DEFAULT_INPUT_TOKENS_PER_OUTPUT_TOKEN = 5


def usd_per_million_output_tokens(usd_per_hour: float, tokens_per_s: float) -> float:
    """What a million output tokens cost on an instance that sustains `tokens_per_s`."""
    if tokens_per_s <= 0:
        raise ValueError(f"tokens_per_s must be positive, got {tokens_per_s!r}")
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def usd_per_month_24x7(usd_per_hour: float) -> float:
    """An instance left running all month, busy or idle."""
    return usd_per_hour * HOURS_PER_MONTH


def bedrock_usd_per_million_output_tokens_with_input(
    usd_per_million_input_tokens: float,
    usd_per_million_output_tokens: float,
    input_tokens_per_output_token: float = DEFAULT_INPUT_TOKENS_PER_OUTPUT_TOKEN,
) -> float:
    """Bedrock's price per million output tokens once the prompt tokens that come with
    each output token are paid for too (an instance's hourly price already covers them)."""
    if input_tokens_per_output_token < 0:
        raise ValueError("input_tokens_per_output_token must not be negative")
    return usd_per_million_output_tokens + input_tokens_per_output_token * usd_per_million_input_tokens


def break_even_output_tokens_per_s(
    usd_per_hour: float,
    bedrock_usd_per_million_input_tokens: float,
    bedrock_usd_per_million_output_tokens: float,
    input_tokens_per_output_token: float = DEFAULT_INPUT_TOKENS_PER_OUTPUT_TOKEN,
) -> float:
    """The output rate, held around the clock, at which the instance costs what Bedrock
    would for the same tokens. Below it Bedrock is cheaper; above it the instance is.

    Solves usd_per_million_output_tokens(usd_per_hour, rate) == Bedrock's price per
    million output tokens including `input_tokens_per_output_token` input tokens.
    """
    bedrock = bedrock_usd_per_million_output_tokens_with_input(
        bedrock_usd_per_million_input_tokens, bedrock_usd_per_million_output_tokens,
        input_tokens_per_output_token,
    )
    if bedrock <= 0:
        raise ValueError("the Bedrock price must be positive to break even against it")
    return usd_per_hour / (bedrock / TOKENS_PER_MILLION * SECONDS_PER_HOUR)


def billable_minutes(started_at: datetime, ended_at: datetime) -> float:
    """Minutes between two instants (provision start to teardown finish)."""
    minutes = (ended_at - started_at).total_seconds() / 60
    if minutes < 0:
        raise ValueError(f"ends ({ended_at.isoformat()}) before it starts ({started_at.isoformat()})")
    return minutes


def usd_for_minutes(usd_per_hour: float, minutes: float) -> float:
    """What `minutes` of an hourly-billed resource cost, prorated by the second (EC2's
    one-minute minimum per launch is left out: every run here lasts longer)."""
    return usd_per_hour * minutes / 60
