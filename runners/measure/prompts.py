"""Prompts of an exact length, counted by the serving engine's own tokenizer.

The prompt is the forced-reply instruction followed by filler words, each a common English
word after a space (one token in the BPE and SentencePiece vocabularies of the models
served here). The engine counts: vLLM's `POST /tokenize` where the client has it (no
generation, template included); otherwise a probe, a 1-token request whose reply carries
the server's `usage.prompt_tokens` (vLLM on SageMaker, llama.cpp, Bedrock's inputTokens).
The word count is corrected by the miss until the count is exact or MAX_PROBES are spent.

Variant `v` reorders the filler so no two requests share a prefix beyond the instruction
and one word: an engine with prefix caching (vLLM's default) must not serve a repeated
prompt, or a shorter prompt's prefix, from cache and report a prefill that never happened.
The filler walks a prime-sized word list from start v mod P in steps of 1 + (v div P) mod
(P - 1), so VARIANTS sequences are distinct and each holds the same words; each phase (and
each scale-out shard) draws its variants from its own range (VARIANT_BASE).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runners.backends.reply import Ask

INSTRUCTION = "Write a long story about a lighthouse keeper and the sea. Notes:"
FILLER = ("the of and to in is it that was for on are with as be at by this from or one had "
          "not but what all were when we there can an your which their said if do will each "
          "about how up out them then she many some so these would other into has more her "
          "two like him see time could no make than first been its who now people my made "
          "over did down only way find use may water long little very after words called "
          "just where most know get through back much go good new write our used me man "
          "too any day same right look think also around another came come work three word "
          "must because does part even place well such here take why things help put years "
          "different away again off went old number great tell men say small every found "
          "still between name should home big give air line set own under read last never "
          "us left end along while might next sound below saw something thought both few "
          "those always looked show large often together asked house don world going want "
          "school important until form food keep children feet land side without boy once "
          "animals life enough took sometimes four head above kind began almost live page "
          "got earth need far hand high year mother light parts country father let night "
          "following picture being study second eyes soon times story boys since white days "
          "ever paper hard near sentence better best across during today others however "
          "sure means knew try told young miles sun ways thing whole hear example heard "
          "several change answer room sea against top turned learn point city play toward "
          "five using himself usually").split()
CYCLE = 283  # a prime <= len(FILLER): every step walks all CYCLE words once per cycle
VARIANTS = CYCLE * (CYCLE - 1)
# Where each sender's variants start, so phases (separate processes in the cloud) and the
# shards of a level never repeat each other's prompts within a run; variant 0 is the
# calibration's (its probes are untimed).
VARIANT_BASE = {"stream": 1, "context": 5_000, "load": 10_000, "shard": 40_000}
SHARD_VARIANTS = 1_000  # per shard: shard k of level i starts at shard base + (i*40 + k)*1000
MAX_PROBES = 6
TOLERANCE = 0.02  # the bound: within 2% of the asked length, or say why not


def filler(words: int, variant: int = 0) -> str:
    """`words` filler words in variant v's order."""
    variant %= VARIANTS
    start, step = variant % CYCLE, 1 + variant // CYCLE
    return " ".join(FILLER[(start + i * step) % CYCLE] for i in range(words))


def shard_variant_base(level: int, shard: int) -> int:
    return VARIANT_BASE["shard"] + (level * 40 + shard) * SHARD_VARIANTS


def messages_for(words: int, variant: int = 0) -> list[dict[str, Any]]:
    text = INSTRUCTION if words == 0 else f"{INSTRUCTION} {filler(words, variant)}"
    return [{"role": "user", "content": text}]


@dataclass
class Calibration:
    """How a length was reached: the word count, what the engine counted for it, how."""

    asked: int
    words: int = 0
    counted: int | None = None  # the engine's count of the built prompt (variant 0)
    method: str = "none"  # "tokenize" | "usage-probe" | "none" (the engine would not say)
    probes: list[dict[str, int | None]] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"asked": self.asked, "words": self.words, "counted": self.counted,
                "method": self.method, "probes": self.probes, "note": self.note}


class PromptBuilder:
    """`messages(tokens, variant)` for one phase; calibrates each length once.

    `rec` is the phase's Recorder: probes are real requests and go into its records
    (shape "prompt-probe"), so a reader sees every request the run sent.
    """

    def __init__(self, rec):
        self.rec = rec
        self.calibrations: dict[int, Calibration] = {}

    def _count(self, messages: list[dict[str, Any]], cal: Calibration) -> int | None:
        counted = self.rec.client.count_prompt_tokens(messages)
        if counted is not None:
            cal.method = "tokenize"
            return counted
        reply = self.rec.send(Ask(messages, max_tokens=1), shape="prompt-probe",
                              prompt_tokens_asked=cal.asked)
        if reply.prompt_tokens is None:
            return None
        cal.method = "usage-probe"
        return reply.prompt_tokens

    def calibrate(self, tokens: int) -> Calibration:
        if tokens in self.calibrations:
            return self.calibrations[tokens]
        cal = Calibration(asked=tokens)
        self.calibrations[tokens] = cal
        base = self._count(messages_for(0), cal)
        cal.probes.append({"words": 0, "tokens": base})
        if base is None:
            cal.note = ("the engine reports no prompt token count (no /tokenize, no usage): "
                        "the prompt has the asked number of filler words, unverified")
            cal.words, cal.method = max(0, tokens), "none"
            return cal
        if base >= tokens:
            cal.words, cal.counted = 0, base
            cal.note = (f"the instruction and chat template alone are {base} tokens, "
                        f"more than the {tokens} asked: the shortest prompt is sent")
            return cal
        words, per_word = tokens - base, 1.0
        best = (abs(base - tokens), 0, base)
        for _ in range(MAX_PROBES - 1):
            counted = self._count(messages_for(words), cal)
            cal.probes.append({"words": words, "tokens": counted})
            if counted is None:
                break
            best = min(best, (abs(counted - tokens), words, counted))
            if counted == tokens:
                break
            if counted > base:
                per_word = (counted - base) / words
            words = max(1, words + round((tokens - counted) / per_word))
        _, cal.words, cal.counted = best
        if abs(cal.counted - tokens) > TOLERANCE * tokens:
            cal.note = (f"after {len(cal.probes)} counts the closest prompt is {cal.counted} "
                        f"tokens for {tokens} asked")
        return cal

    def ask(self, tokens: int, max_tokens: int, *, stream: bool, variant: int = 0) -> Ask:
        """A forced-length reply to a prompt of `tokens` engine tokens."""
        cal = self.calibrate(tokens)
        return Ask(messages_for(cal.words, variant), max_tokens=max_tokens, stream=stream,
                   force_tokens=True)

    def report(self, tokens: int, served: list[int]) -> dict[str, Any]:
        """The phase's `prompt` block: asked, calibrated, what the server reported on the
        timed requests, and whether that is within TOLERANCE (or why it cannot be said)."""
        cal = self.calibrate(tokens)
        out = cal.to_dict()
        seen = served or ([cal.counted] if cal.counted is not None else [])
        out["served_min"] = min(served) if served else None
        out["served_max"] = max(served) if served else None
        out["served_n"] = len(served)
        worst = max((abs(n - tokens) for n in seen), default=None)
        out["within_tolerance"] = None if worst is None else worst <= TOLERANCE * tokens
        if worst is None:
            out["note"] = out["note"] or "no token count from the engine: length unverified"
        elif not served and out["note"] is None:
            out["note"] = ("the timed replies carry no usage (a streaming engine without "
                           "include_usage): the length is the calibrated count")
        elif not out["within_tolerance"] and out["note"] is None:
            out["note"] = (f"the server counted {out['served_min']}-{out['served_max']} "
                           f"tokens for {tokens} asked")
        return out
