"""The 40 exact-answer questions of the seed articles' compare.py, drawn the same way
(same seed, same order) so results compare with theirs."""

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

    def correct(self, answer: str) -> bool:
        return re.search(self.pattern, answer, self.flags) is not None


def questions() -> list[Question]:
    rng = random.Random(SEED)
    out = []
    for _ in range(15):
        a, b = rng.randint(12, 99), rng.randint(12, 99)
        out.append(Question("mul", f"What is {a} * {b}? Reply with the number only.",
                            rf"\b{a * b}\b"))
    for _ in range(15):
        a, b, c = rng.randint(100, 999), rng.randint(100, 999), rng.randint(100, 999)
        out.append(Question("add", f"What is {a} + {b} - {c}? Reply with the number only.",
                            rf"(?<![\d-]){a + b - c}\b"))
    for country, capital in CAPITALS:
        out.append(Question("capital", f"What is the capital of {country}? Answer in one word.",
                            capital, re.IGNORECASE))
    return out
