"""Is a running model healthy: one exact-answer question from the quality suite, asked at
temperature 0, and the reply judged the way the phases judge replies. HTTP 200 is not
enough: a broken build answers 200 with "The The The ..." or an empty string."""

from __future__ import annotations

import time
from typing import Any

from runners.backends.reply import Ask, BackendClient
from runners.measure import degeneracy, quality_suite


def check(client: BackendClient, question: quality_suite.Question | None = None
          ) -> dict[str, Any]:
    """{"healthy", "problem" (None when healthy), "prompt", "reply", "expected", ...}."""
    q = question or quality_suite.questions()[0]
    started = time.perf_counter()
    reply = client.chat(Ask(messages=[{"role": "user", "content": q.prompt}],
                            max_tokens=quality_suite.MAX_TOKENS,
                            temperature=quality_suite.TEMPERATURE))
    seconds = time.perf_counter() - started
    if not reply.ok:
        problem = f"request {reply.status}: {reply.error or 'no detail'}"
    elif reason := degeneracy.degenerate_reason(reply.text, reply.tool_calls):
        problem = f"degenerate reply: {reason}"
    elif not q.correct(reply.text):
        problem = f"wrong answer: expected a match for {q.pattern!r}"
    else:
        problem = None
    return {
        "healthy": problem is None, "problem": problem, "prompt": q.prompt,
        "reply": reply.text, "expected": q.pattern, "http_status": reply.http_status,
        "finish_reason": reply.finish_reason, "completion_tokens": reply.completion_tokens,
        "seconds": round(seconds, 3),
    }
