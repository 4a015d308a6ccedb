"""Summaries for compare tests: the cost fixtures' six runs, and new runs made from them."""

import copy
import json
import shutil
from pathlib import Path

FIXTURE_RUNS = Path(__file__).resolve().parents[1] / "cost" / "fixtures" / "runs"
G6 = "2026-11-02-e2b-emb4-g6/20261102T100000Z-a1b2c3"


def fixture_summary(which: str = G6) -> dict:
    return json.loads((FIXTURE_RUNS / which / "summary.json").read_text())


def copy_fixture_runs(dest: Path) -> Path:
    shutil.copytree(FIXTURE_RUNS, dest)
    return dest


def write_run(root: Path, summary: dict, run_id: str, **changes) -> Path:
    """A copy of `summary` as run `run_id` under root/<experiment>/<run_id>/summary.json."""
    summary = copy.deepcopy(summary) | {"run_id": run_id, **changes}
    folder = root / f"2026-12-03-{summary['experiment']}" / run_id
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder / "summary.json"
