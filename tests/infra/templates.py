"""Helpers for reading synthesized templates in tests."""

from __future__ import annotations

import copy
import json
import re

_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")


# A Lambda version's logical id ends in a hash of the function's code and settings.
_VERSION_HASH = re.compile(r"(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}")


def masked(template: dict) -> dict:
    """The template with asset hashes replaced, so a snapshot changes only when the
    infrastructure does, not when an asset's bytes (e.g. a Lambda zip) do."""
    text = _ASSET_HASH.sub("<asset-hash>", json.dumps(template, sort_keys=True))
    text = _VERSION_HASH.sub(r"\1<code-hash>", text)
    return json.loads(text)


def resources(template: dict, type_name: str, prefix: str = "") -> dict[str, dict]:
    """Resources of `type_name`, optionally only those whose logical id starts with
    `prefix` (the construct path, e.g. "Vllm" for everything under the Vllm construct)."""
    return {k: v for k, v in template["Resources"].items()
            if v["Type"] == type_name and k.startswith(prefix)}


def only(template: dict, type_name: str, prefix: str = "") -> dict:
    found = resources(template, type_name, prefix)
    assert len(found) == 1, f"expected one {type_name}, found {sorted(found)}"
    return copy.deepcopy(next(iter(found.values())))
