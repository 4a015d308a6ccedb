"""Answer-by-answer A/B against the baseline run, the seeds' way ("35 of the answers
identical"; "emb4 matches text-only answer for answer"): per run, how many of the quality
answers are identical to the baseline's after normalising, which questions flipped right
to wrong or wrong to right, and McNemar's exact p-value for the difference in score.

A decode difference is called out only when the two 95% intervals do not overlap (a
single run's bootstrap interval of its fit, or a group's t interval over its runs).
"""

from __future__ import annotations

import re
from typing import Any

from runners.results import intervals

SIGNIFICANT_P = 0.05


def normalize(answer: str) -> str:
    """Case, runs of whitespace, Markdown emphasis and trailing punctuation do not make two
    answers different: "**Canberra.**" and "canberra" are one answer."""
    text = re.sub(r"[*_`]", "", answer).casefold()
    return " ".join(text.split()).strip(" .!;:,")


def answer_diff(run: list[dict[str, Any]], base: list[dict[str, Any]]) -> dict[str, Any]:
    """Identical (normalised) answers, questions (1-based) flipped each way, McNemar p."""
    pairs = list(zip(run, base))
    right_to_wrong = [i + 1 for i, (r, b) in enumerate(pairs) if b["correct"] and not r["correct"]]
    wrong_to_right = [i + 1 for i, (r, b) in enumerate(pairs) if r["correct"] and not b["correct"]]
    return {"identical": sum(normalize(r["answer"]) == normalize(b["answer"]) for r, b in pairs),
            "total": len(pairs), "right_to_wrong": right_to_wrong,
            "wrong_to_right": wrong_to_right,
            "mcnemar_p": intervals.mcnemar_exact_p(len(right_to_wrong), len(wrong_to_right))}


def decode_call(run: dict[str, Any], base: dict[str, Any]) -> str:
    """A sentence on the decode rates: a difference only when the intervals are apart."""
    a, b = run["decode_tokens_per_s"], base["decode_tokens_per_s"]
    if a is None or b is None:
        return "—"
    ia, ib = run.get("decode_interval_95"), base.get("decode_interval_95")
    overlapping = intervals.overlap(ia, ib)
    if overlapping is None:
        return f"{a:.1f} vs {b:.1f}: no interval, no call"
    span = lambda p: f"{p[0]:.1f}–{p[1]:.1f}"  # noqa: E731
    if overlapping:
        return f"{a:.1f} vs {b:.1f}: intervals overlap ({span(ia)}, {span(ib)}), no difference"
    return (f"**{a / b:.2f}x** ({span(ia)} vs {span(ib)}: intervals apart)")


def _questions(numbers: list[int]) -> str:
    return ", ".join(f"Q{n}" for n in numbers) or "none"


def markdown(rows: list[dict[str, Any]], base_run: dict[str, Any],
             grouped: dict[str, dict[str, Any]]) -> list[str]:
    """The A/B section: one line per run other than the baseline run. `grouped`:
    experiment -> its ranked row. A run of the baseline's own experiment is set against
    the baseline run (each with its bootstrap interval); a run of another experiment
    has its group's decode (median and t interval over its runs, or the single run's
    bootstrap) set against the baseline's group."""
    body = []
    for r in rows:
        if r["run_id"] == base_run["run_id"]:
            continue
        same = r["experiment"] == base_run["experiment"]
        call = decode_call(r, base_run) if same else decode_call(
            grouped.get(r["experiment"], r), grouped.get(base_run["experiment"], base_run))
        if not r["answers"] or not base_run["answers"]:
            body.append([r["label"], r["run_id"], "answers not recorded", "—", "—", "—", call])
            continue
        diff = answer_diff(r["answers"], base_run["answers"])
        p = diff["mcnemar_p"]
        body.append([r["label"], r["run_id"], f"{diff['identical']} of {diff['total']}",
                     _questions(diff["right_to_wrong"]), _questions(diff["wrong_to_right"]),
                     f"{p:.3g}" + (" (significant)" if p < SIGNIFICANT_P else ""), call])
    if not body:
        return []
    header = ["Backend", "Run", "Identical answers", "Right → wrong", "Wrong → right",
              "McNemar exact p", "Decode tok/s vs baseline"]
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(cells) + " |" for cells in body]
    return [f"## Answer by answer vs the baseline run ({base_run['label']}, run "
            f"{base_run['run_id']})",
            "Answers are compared after normalising case, spaces, emphasis and trailing "
            "punctuation; flips use the echo-free score. McNemar's exact test looks only at the "
            f"flipped questions: p below {SIGNIFICANT_P} is marked. Forty questions cannot "
            "resolve a one- or two-question difference (one flip either way gives p = 1.0). "
            "A decode difference is called only when the 95% intervals do not overlap.",
            "\n".join(table)]
