"""runners.lambda_handler: what the state machine branches on, and the guards."""

from __future__ import annotations

import pytest

from runners import lambda_handler, phases, workflow
from runners.providers.base import ProvisionError


@pytest.fixture
def phase(monkeypatch):
    def install(name, function):
        monkeypatch.setattr(phases, "PHASE_FUNCTIONS", {name: function})
    return install


def test_capacity_from_provision_is_a_branch_not_an_error(phase):
    def refuse(event):
        raise ProvisionError("capacity", "no g6 anywhere", {"placement": {"region": "r"}})
    phase("provision", refuse)
    result = lambda_handler.handler({"phase": "provision"}, None)
    assert result == {"status": "capacity", "placement": {"region": "r"},
                      "message": "no g6 anywhere"}


@pytest.mark.parametrize("kind", ["quota", "fatal"])
def test_quota_and_fatal_refusals_fail_the_task(phase, kind):
    def refuse(event):
        raise ProvisionError(kind, "refused")
    phase("provision", refuse)
    with pytest.raises(ProvisionError):
        lambda_handler.handler({"phase": "provision"}, None)


def test_await_ready_failed_for_capacity_reads_as_capacity(phase):
    phase("await_ready", lambda e: {"state": "failed", "kind": "capacity", "placement": {}})
    assert lambda_handler.handler({"phase": "await_ready"}, None)["status"] == "capacity"
    phase("await_ready", lambda e: {"state": "failed", "placement": {}})
    assert lambda_handler.handler({"phase": "await_ready"}, None)["status"] == "failed"


@pytest.mark.parametrize("name,result,message", [
    ("provision", {"endpoint": "x"}, "must return a 'placement' object"),
    ("await_ready", {"state": "InService", "placement": {}}, "returned state 'InService'"),
    ("teardown", {"state": "gone"}, "returned state 'gone'"),
    ("decode", ["not", "a", "dict"], "returned list, not a JSON object"),
    ("decode", {"blob": "x" * workflow.MAX_RESULT_BYTES}, "write the data to the results"),
])
def test_results_the_workflow_cannot_use_fail_with_a_clear_message(phase, name, result,
                                                                    message):
    phase(name, lambda event: result)
    with pytest.raises(lambda_handler.PhaseContractError, match=message):
        lambda_handler.handler({"phase": name}, None)


def test_a_phase_without_an_implementation_says_which(monkeypatch):
    monkeypatch.setattr(phases, "PHASE_FUNCTIONS", {})
    with pytest.raises(NotImplementedError, match="phase 'stream' has no implementation"):
        lambda_handler.handler({"phase": "stream"}, None)
