"""The count_ids tool-call check: the right number AND the right filter.

A wrong filter returns an exact number with a clean source, so the call itself is graded.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Any

IDS = (0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13)
THRESHOLD = 10
EXPECTED = sum(1 for i in IDS if i >= THRESHOLD)  # 8
QUESTION = (f"The ids are {list(IDS)}. How many of the ids are {THRESHOLD} or more? "
            "Answer with the number.")
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
       "==": operator.eq, "!=": operator.ne}
TOOL = {
    "type": "function",
    "function": {
        "name": "count_ids",
        "description": "Count the ids that satisfy `id <op> value`.",
        "parameters": {
            "type": "object",
            "properties": {"op": {"type": "string", "enum": sorted(OPS)},
                           "value": {"type": "integer"}},
            "required": ["op", "value"],
        },
    },
}


def selected_ids(arguments: str | dict[str, Any]) -> list[int] | None:
    """The ids a count_ids call selects, or None when the call is malformed."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        op, value = OPS[args["op"]], int(args["value"])
    except (ValueError, KeyError, TypeError):
        return None
    return [i for i in IDS if op(i, value)]


def run_tool(arguments: str | dict[str, Any]) -> str:
    ids = selected_ids(arguments)
    return json.dumps({"error": "bad arguments"} if ids is None else {"count": len(ids)})


def filter_ok(arguments: str | dict[str, Any]) -> bool:
    ids = selected_ids(arguments)
    return ids is not None and sorted(ids) == sorted(i for i in IDS if i >= THRESHOLD)


def answer_correct(text: str) -> bool:
    numbers = re.findall(r"-?\d+", text)
    return bool(numbers) and int(numbers[-1]) == EXPECTED
