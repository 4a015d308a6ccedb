"""runners/ (the Lambda asset: stdlib + boto3) never depends on the repack tool."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_runners_never_import_the_repack_tool():
    offenders = [p.relative_to(ROOT).as_posix() for p in (ROOT / "runners").rglob("*.py")
                 if "benchstack_repack" in p.read_text()]
    assert offenders == []


def test_repack_requirements_are_pinned_and_apart():
    lines = [l for l in (ROOT / "benchstack_repack" / "requirements.txt").read_text()
             .splitlines() if l and not l.startswith("#")]
    assert sorted(l.split("==")[0] for l in lines) == ["numpy", "safetensors"]
    assert all("==" in l for l in lines)
    assert "numpy" not in (ROOT / "requirements.txt").read_text()
