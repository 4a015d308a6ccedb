"""The main job (`./dev main`: experiments/local-smollm2-135m.toml) on the real engine: its
run folder has a quality score from real answers and a graded tool call. About a minute on
2 cores."""

import json

import pytest

from runners.measure import quality_suite, toolcall_check
from runners.workflow import driver
from tests.conftest import EXPERIMENTS_DIR

pytest.importorskip("llama_cpp", reason="./dev main installs the local engine")
pytestmark = pytest.mark.slow

MAIN_JOB = EXPERIMENTS_DIR / "local-smollm2-135m.toml"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    store = tmp_path_factory.mktemp("main-job")
    outcome = driver.run_experiment(str(MAIN_JOB), str(store))
    states = {r["phase"]: r["state"] for r in outcome["results"]}
    assert set(states.values()) == {"done"}, outcome["results"]
    return store / outcome["context"]["run_prefix"]


def load(folder, name):
    return json.loads((folder / name).read_text())


def test_quality_is_scored_from_real_answers(run_folder):
    quality = load(run_folder, "quality.json")
    questions = quality_suite.questions()
    assert quality["total"] == len(questions) == 40
    answers = quality["answers"]
    assert all(a["status"] == "ok" and a["answer"].strip() for a in answers)
    # an instruction-tuned model answers: no reply starts by echoing its question
    assert not any(a["answer"].strip().startswith(a["prompt"]) for a in answers)
    # the score is the suite's own grading of these answers, and the model gets some right
    assert quality["correct"] == sum(q.correct(a["answer"]) for q, a in zip(questions, answers))
    assert quality["correct"] >= 1
    assert load(run_folder, "summary.json")["quality"]["correct"] == quality["correct"]


def test_the_tool_call_is_made_and_graded(run_folder):
    toolcall = load(run_folder, "toolcall.json")
    assert toolcall["supported"] is True and toolcall["runs"] == 2
    for result in toolcall["results"]:
        assert result["filters"], result  # the model called count_ids at least once
        assert result["filter_ok"] == any(toolcall_check.filter_ok(f) for f in result["filters"])
    summary = load(run_folder, "summary.json")["toolcall"]
    assert summary["filter_ok"] == sum(r["filter_ok"] for r in toolcall["results"])
    assert summary["correct"] == sum(r["correct"] for r in toolcall["results"])


def test_the_report_says_what_the_local_engine_is(run_folder):
    text = (run_folder / "report.md").read_text()
    assert "## Local engine" in text and "one request at a time" in text
    assert "trained for 8192 tokens" in text and "Roofline: host memory bandwidth" in text
    assert load(run_folder, "summary.json")["host"]["memory_bandwidth_gb_per_s"] > 0
