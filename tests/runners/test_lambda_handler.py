"""runners.workflow.lambda_handler: the context a workflow task gives a phase, what the state
machine branches on, and the guards."""

from __future__ import annotations

import pytest

from runners import providers
from runners.workflow import execution as workflow
from runners.workflow import lambda_handler
from runners.workflow import phases
from tests.runners.workflow_experiments import experiment_snapshot

RUN = {"run_id": "20261203T001500Z-abc123", "results_bucket": "results",
       "results_prefix": "runs/2026-12-03-e2b-test/20261203T001500Z-abc123/",
       "home_region": "us-east-2", "started_at": "2026-12-03T00:15:00Z"}


def _event(phase: str, **extra) -> dict:
    return {"phase": phase, "experiment": experiment_snapshot("sagemaker"), "run": RUN,
            "region": "us-east-2", "placement": {}, "results": {}, "error": {}, **extra}


def test_each_call_does_one_thing_one_region_one_look_one_teardown():
    context = lambda_handler.phase_context(_event("await_ready", placement={"region": "r"}))
    assert context["regions"] == ["us-east-2"]
    assert context["poll_window_s"] == 0 and context["teardown_budget_s"] == 0
    assert context["store"] == "s3://results" and context["run_prefix"] == RUN["results_prefix"]
    assert context["placement"] == {"region": "r"}
    assert context["started_at"] == RUN["started_at"]


def test_teardown_without_a_placement_still_names_the_region_and_run():
    context = lambda_handler.phase_context(_event("teardown", error={"Error": "X"}))
    assert context["placement"] == {"region": "us-east-2", "run_id": RUN["run_id"]}
    assert context["workflow_error"] == {"Error": "X"}


@pytest.fixture
def answer(monkeypatch):
    """Make run_phase answer `value` (the shape runners.workflow.phases returns) without running."""
    def install(value):
        monkeypatch.setattr(phases, "run_phase", lambda name, context: value)
    return install


def _answer(phase, state, *, outcome=None, kind=None, placement=None, error=None):
    value = {"phase": phase, "state": state, "key": f"x/{phase}.json",
             "updates": {"placement": placement} if placement is not None else {}}
    if phase in phases.REPEATABLE:
        value.update(outcome=outcome, kind=kind)
    if error:
        value["error"] = error
    return value


@pytest.mark.parametrize("phase,given,status", [
    ("provision", dict(state="done", outcome="placed", placement={"region": "r"}), "placed"),
    ("provision", dict(state="failed", kind="capacity", placement={"region": "r"},
                       error="no capacity"), "capacity"),
    ("await_ready", dict(state="waiting", placement={"region": "r"}), "waiting"),
    ("await_ready", dict(state="done", outcome="ready", placement={"region": "r"}), "ready"),
    ("await_ready", dict(state="failed", outcome="failed", kind="capacity",
                         placement={"region": "r"}), "capacity"),
    ("await_ready", dict(state="failed", outcome="failed", placement={"region": "r"},
                         error="model load error"), "failed"),
])
def test_placement_answers_become_the_workflow_status(answer, phase, given, status):
    answer(_answer(phase, **given))
    result = lambda_handler.handler(_event(phase))
    assert result["status"] == status
    assert result["placement"] == {"region": "r"}


@pytest.mark.parametrize("phase", ["provision", "await_ready"])
def test_a_placement_step_that_raised_fails_the_task_with_its_message(answer, phase):
    answer(_answer(phase, "failed", error="RuntimeError: boom"))
    with pytest.raises(lambda_handler.PhaseFailed, match="RuntimeError: boom"):
        lambda_handler.handler(_event(phase))


@pytest.mark.parametrize("kind", ["quota", "fatal"])
def test_quota_and_fatal_refusals_fail_the_task(answer, kind):
    answer(_answer("provision", "failed", kind=kind, error="refused"))
    with pytest.raises(lambda_handler.PhaseFailed, match="refused"):
        lambda_handler.handler(_event("provision"))


@pytest.mark.parametrize("outcome", ["deleted", "retry-later"])
def test_teardown_answers_deleted_or_retry_later(answer, outcome):
    answer(_answer("teardown", "done" if outcome == "deleted" else "failed", outcome=outcome))
    assert lambda_handler.handler(_event("teardown"))["state"] == outcome


def test_a_teardown_that_raised_fails_the_task_so_the_workflow_retries(answer):
    answer(_answer("teardown", "failed", error="ClientError: throttled"))
    with pytest.raises(lambda_handler.PhaseFailed, match="throttled"):
        lambda_handler.handler(_event("teardown"))


def test_await_ready_answering_something_else_is_a_contract_error(answer):
    answer(_answer("await_ready", "done", outcome="InService", placement={}))
    with pytest.raises(lambda_handler.PhaseContractError, match="'InService'"):
        lambda_handler.handler(_event("await_ready"))


def test_a_measurement_phase_keeps_its_answer_without_the_updates(answer):
    answer({"phase": "decode", "state": "failed", "key": "x/decode.json", "updates": {},
            "error": "TimeoutError: read timed out"})
    assert lambda_handler.handler(_event("decode")) == {
        "phase": "decode", "state": "failed", "key": "x/decode.json",
        "error": "TimeoutError: read timed out"}


def test_an_answer_too_big_for_the_state_is_refused_with_the_remedy(answer):
    answer({"phase": "decode", "state": "done", "key": "k", "updates": {},
            "samples": "x" * workflow.MAX_RESULT_BYTES})
    with pytest.raises(lambda_handler.PhaseContractError, match="write the data to the results"):
        lambda_handler.handler(_event("decode"))


def test_the_lambda_asset_holds_everything_the_handlers_import(tmp_path):
    """The runner functions ship runners/ and the SDK (benchstack_constructs/runner_bundle.py):
    every handler, and every provider and client a phase loads, must import from it."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(Path(__file__).resolve().parents[2] / "runners", tmp_path / "runners",
                    ignore=shutil.ignore_patterns("__pycache__"))
    modules = ["runners.workflow.lambda_handler", "runners.watchdog.lambda_handler", "runners.workflow.start",
               "runners.cost.phase", *(target.partition(":")[0]
                                       for name, target in providers.REGISTRY.items()
                                       if name != "local")]  # local needs llama.cpp
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "leaked = [m for m in sys.modules if m.split('.')[0] in "
            "('stacks', 'benchstack_constructs', 'aws_cdk', 'tests')]\n"
            "assert not leaked, leaked\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_the_runners_digest_is_the_same_from_the_lambda_asset(tmp_path):
    """A manifest names the code that measured a run: the digest of runners/ copied alone
    (as the Lambda asset is) equals the checkout's, and changes when one byte does."""
    import shutil
    from pathlib import Path

    from runners.code_digest import runners_digest

    source = Path(__file__).resolve().parents[2] / "runners"
    copy = shutil.copytree(source, tmp_path / "runners",
                           ignore=shutil.ignore_patterns("__pycache__"))
    assert runners_digest(copy) == runners_digest(source)
    stats = copy / "measure" / "stats.py"
    stats.write_bytes(stats.read_bytes() + b"\n")
    assert runners_digest(copy) != runners_digest(source)
