"""Helpers for reading synthesized templates in tests."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
_REPO_ROOT = str(Path(__file__).resolve().parents[2])


def masked(template: dict) -> dict:
    """The template with asset hashes and the checkout's absolute path (experiment `source`)
    replaced, so a snapshot changes only when the infrastructure does, not when an asset's
    bytes (e.g. a Lambda zip) do or the repository sits in another folder."""
    text = _ASSET_HASH.sub("<asset-hash>", json.dumps(template, sort_keys=True))
    return json.loads(text.replace(_REPO_ROOT + "/", "<repo>/"))


def resources(template: dict, type_name: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def only(template: dict, type_name: str) -> dict:
    found = resources(template, type_name)
    assert len(found) == 1, f"expected one {type_name}, found {sorted(found)}"
    return copy.deepcopy(next(iter(found.values())))
