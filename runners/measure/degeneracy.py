"""Catch replies that are HTTP 200 and useless: empty output, or a repeated-token loop
such as "The The The ..." (a broken build produces exactly that while every latency and
throughput figure looks fine)."""

from __future__ import annotations

import re

MIN_WORDS = 8  # shorter replies are too short to call a loop
MAX_PERIOD = 8  # longest repeated phrase, in words, that counts as a loop
MIN_REPEATS = 4
LOOP_SHARE = 0.5  # a loop covering at least half the reply fails it
CHAR_RUN = re.compile(r"(.)\1{39,}", re.S)  # 40 copies of one character, e.g. "!!!!..."


def _longest_loop_words(words: list[str]) -> int:
    """Words covered by the longest run of one phrase repeated back to back."""
    best = 0
    n = len(words)
    for period in range(1, MAX_PERIOD + 1):
        run = 0
        for i in range(period, n):
            run = run + 1 if words[i] == words[i - period] else 0
            repeats = run // period + 1
            if repeats >= MIN_REPEATS:
                best = max(best, run + period)
    return best


def degenerate_reason(text: str, tool_calls: list | None = None) -> str | None:
    """Why the reply is degenerate, or None when it is not."""
    if not text.strip():
        return None if tool_calls else "empty output"
    if CHAR_RUN.search(text):
        return "one character repeated 40+ times"
    words = re.findall(r"\w+|[^\w\s]", text.lower())
    if len(words) < MIN_WORDS:
        return None
    looped = _longest_loop_words(words)
    if looped >= LOOP_SHARE * len(words):
        return f"repeated-token loop covers {looped} of {len(words)} tokens"
    return None
