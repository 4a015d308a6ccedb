"""`report` on a run that is still going writes a side report; the run's own final report
is the first to write summary.json and report.md."""

import json
import subprocess
import sys
from pathlib import Path

from runners.results import report
from tests.results.synthetic_run import write_run

ROOT = Path(__file__).resolve().parents[2]


def test_report_on_a_live_run_goes_to_a_side_folder_in_one_line(tmp_path):
    store = write_run(tmp_path, finished=False)
    folder = Path(store.uri())
    done = subprocess.run([sys.executable, "-m", "runners", "report", str(folder)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("run still going (no teardown.json yet): partial report in ")
    assert not (folder / "summary.json").exists() and not (folder / "report.md").exists()
    [side] = (folder / "partial").iterdir()
    partial = json.loads((side / "summary-partial.json").read_text())
    assert partial["partial"] is True and partial["decode"]["tokens_per_s"] > 40
    assert "**Partial report**" in (side / "report.md").read_text()
    assert done.stdout.startswith("# local-synthetic")


def test_the_final_report_replaces_what_a_live_report_wrote(tmp_path):
    store = write_run(tmp_path, finished=False)
    first = report.write_report(store, "", live_to_side=True)
    second = report.write_report(store, "", live_to_side=True)  # a fresh side folder each time
    assert first["partial_prefix"] != second["partial_prefix"]
    store.put_json("teardown.json", {"state": "deleted", "finished_at": "2026-12-03T09:05:00Z"})
    final = report.write_report(store, "")  # what the report phase calls
    assert final["partial_prefix"] is None and "summary.json" in final["written"]
    summary = store.get_json("summary.json")
    assert summary["partial"] is False and summary["phases"]["teardown"]["state"] == "done"
    assert "**Partial report**" not in store.get_bytes("report.md").decode()


def test_report_on_a_finished_run_writes_the_main_files(tmp_path):
    store = write_run(tmp_path)
    out = report.write_report(store, "", live_to_side=True)
    assert out["partial_prefix"] is None and store.exists("summary.json")
