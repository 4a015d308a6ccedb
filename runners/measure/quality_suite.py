"""The 40 exact-answer questions of the seed articles' compare.py, drawn the same way
(same seed, same order) so results compare with theirs.

Two scores per answer. `correct_raw` is the seeds' regex on the whole reply, kept so a
figure compares with their tables. `correct` is the same regex after every echo of the
question is cut out of the reply: "What is 337 + 942 - 337?" repeated back contains 942,
so a model that only echoes its prompt would otherwise earn marks.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

SEED = 20260925
CAPITALS = (
    ("Australia", "Canberra"), ("Canada", "Ottawa"), ("Brazil", "Bras[ií]lia"),
    ("Turkey", "Ankara"), ("Nigeria", "Abuja"), ("Switzerland", "Bern"),
    ("Pakistan", "Islamabad"), ("New Zealand", "Wellington"), ("Morocco", "Rabat"),
    ("Vietnam", "Hanoi"),
)
TEMPERATURE = 0.0
MAX_TOKENS = 64


@dataclass(frozen=True)
class Question:
    kind: str  # "mul" | "add" | "capital"
    prompt: str
    pattern: str  # regex that a correct answer matches
    flags: int = 0
    expression: str | None = None  # "337 + 942 - 337": an echo of it is no answer

    def correct_raw(self, answer: str) -> bool:
        """The seeds' score: the regex anywhere in the reply."""
        return re.search(self.pattern, answer, self.flags) is not None

    def correct(self, answer: str) -> bool:
        """The regex in what is left once every echo of the question is removed."""
        return self.correct_raw(strip_echo(self, answer))


def _echo_regex(text: str) -> str:
    """`text` with any run of whitespace (or none) between its words."""
    return r"\s*".join(re.escape(word) for word in text.split())


def sub_expressions(expression: str) -> list[str]:
    """Every run of two or more operands of `expression` with the operators between them:
    "337 + 942 - 337" gives "337 + 942", "942 - 337" and itself. A reply that restates
    part of the question ("337 + 942 = 1850") holds an operand that may be the answer."""
    terms = expression.split()
    return [" ".join(terms[i:j + 1]) for i in range(0, len(terms), 2)
            for j in range(i + 2, len(terms), 2)]


def strip_echo(question: Question, answer: str) -> str:
    """`answer` without the prompt, any sentence of it, or any part of its arithmetic
    expression of two or more operands (spaced any way), longest first so a whole echoed
    prompt goes in one cut."""
    pieces = [question.prompt, *re.split(r"(?<=[?.])\s+", question.prompt)]
    if question.expression:
        pieces += sub_expressions(question.expression)
    for piece in sorted(set(pieces), key=len, reverse=True):
        answer = re.sub(_echo_regex(piece), " ", answer, flags=re.IGNORECASE)
    return answer


def questions() -> list[Question]:
    rng = random.Random(SEED)
    out = []
    for _ in range(15):
        a, b = rng.randint(12, 99), rng.randint(12, 99)
        out.append(Question("mul", f"What is {a} * {b}? Reply with the number only.",
                            rf"\b{a * b}\b", expression=f"{a} * {b}"))
    for _ in range(15):
        a, b, c = rng.randint(100, 999), rng.randint(100, 999), rng.randint(100, 999)
        out.append(Question("add", f"What is {a} + {b} - {c}? Reply with the number only.",
                            rf"(?<![\d-]){a + b - c}\b",
                            expression=f"{a} + {b} - {c}"))
    for country, capital in CAPITALS:
        out.append(Question("capital", f"What is the capital of {country}? Answer in one word.",
                            capital, re.IGNORECASE))
    return out
