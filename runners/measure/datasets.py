"""Prompts from a file: `[benchmark.dataset]` replaces the synthetic prompt of the stream
and load requests with a sample of real ones.

Formats:
- "jsonl": one JSON object per line, {"messages": [OpenAI chat messages], "max_tokens":
  optional int}; blank lines are skipped.
- "sharegpt": ShareGPT's JSON, a list of {"conversations": [{"from": "human" | "gpt",
  "value": text}, ...]}; as vLLM `bench serve --dataset-name sharegpt` does, entries with
  fewer than two turns are dropped and the first turn is the prompt. The reply length is
  the plan's (ShareGPT gives words, not the engine's tokens).

The sample is drawn with `random.Random(seed)`: shuffled, then the first `samples`
(cycling when the file has fewer, which the info block says). The run stores the file's
sha256 and the length distribution of what was sampled.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.measure import stats


class DatasetError(ValueError):
    """A dataset file that cannot be read: names the file (and line) and what is wrong."""


@dataclass(frozen=True)
class Entry:
    messages: list[dict[str, Any]]
    max_tokens: int | None = None


def _jsonl(text: str, name: str) -> list[Entry]:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{name}:{number}: not JSON ({exc.msg})") from None
        messages = row.get("messages") if isinstance(row, dict) else None
        if not (isinstance(messages, list) and messages and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m
                for m in messages)):
            raise DatasetError(f"{name}:{number}: needs \"messages\", a non-empty list of "
                               "{\"role\", \"content\"}")
        max_tokens = row.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1
                                       or isinstance(max_tokens, bool)):
            raise DatasetError(f"{name}:{number}: max_tokens {max_tokens!r} is not a "
                               "positive integer")
        entries.append(Entry(messages, max_tokens))
    return entries


def _sharegpt(text: str, name: str) -> list[Entry]:
    try:
        rows = json.loads(text)
    except ValueError as exc:
        raise DatasetError(f"{name}: not JSON ({exc.msg})") from None
    if not isinstance(rows, list):
        raise DatasetError(f"{name}: ShareGPT JSON is a list of {{\"conversations\": [...]}}")
    entries = []
    for row in rows:
        turns = row.get("conversations") if isinstance(row, dict) else None
        if not isinstance(turns, list) or len(turns) < 2:
            continue
        first = turns[0]
        if isinstance(first, dict) and isinstance(first.get("value"), str):
            entries.append(Entry([{"role": "user", "content": first["value"]}]))
    return entries


READERS = {"jsonl": _jsonl, "sharegpt": _sharegpt}


def resolve(path: str, experiment_source: str) -> Path:
    """Relative paths are read from the experiment file's folder."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    return Path(experiment_source).parent / candidate


def load(path: Path, fmt: str) -> tuple[list[Entry], str]:
    """(entries, sha256 of the file)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    entries = READERS[fmt](data.decode("utf-8", "replace"), str(path))
    if not entries:
        raise DatasetError(f"{path}: no usable entries for format {fmt!r}")
    return entries, hashlib.sha256(data).hexdigest()


def sample(entries: list[Entry], count: int, seed: int) -> list[Entry]:
    order = list(entries)
    random.Random(seed).shuffle(order)
    return [order[i % len(order)] for i in range(count)]


def words(entry: Entry) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in entry.messages)


def info(path: Path, fmt: str, digest: str, entries: list[Entry],
         sampled: list[Entry]) -> dict[str, Any]:
    """What the run stores about its dataset."""
    caps = [e.max_tokens for e in sampled if e.max_tokens is not None]
    return {"path": str(path), "format": fmt, "sha256": digest, "entries": len(entries),
            "samples": len(sampled), "repeats": len(sampled) > len(entries),
            "prompt_words": stats.distribution(words(e) for e in sampled),
            "max_tokens": stats.distribution(caps)}
