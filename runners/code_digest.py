"""A digest of the runners package's source: the same code gives the same digest on a
laptop and in Lambda (whose asset is runners/ and the SDK, without git), so a manifest says
which code measured a run wherever it ran."""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def runners_digest(package: Path = PACKAGE) -> str:
    """'sha256:<16 hex>' over every .py and .json file's path and bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".json")
                       and "__pycache__" not in p.parts):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()[:16]}"
