"""Helpers for reading synthesized templates in tests."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
# Experiment snapshots carry the file they were read from: mask the checkout's location
# so a snapshot taken in one worktree matches in another.
_REPO_ROOT = str(Path(__file__).resolve().parents[2])


def masked(template: dict) -> dict:
    """The template with asset hashes replaced, so a snapshot changes only when the
    infrastructure does, not when an asset's bytes (e.g. a Lambda zip) do."""
    text = _ASSET_HASH.sub("<asset-hash>", json.dumps(template, sort_keys=True))
    text = text.replace(_REPO_ROOT + "/", "<repo>/")
    return json.loads(text)


def resources(template: dict, type_name: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def only(template: dict, type_name: str) -> dict:
    found = resources(template, type_name)
    assert len(found) == 1, f"expected one {type_name}, found {sorted(found)}"
    return copy.deepcopy(next(iter(found.values())))
