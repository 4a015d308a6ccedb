"""The region-fallback driver with a scripted provider: bounded waits, teardown on every
path (Ctrl-C included), and what it records."""

import pytest

from runners.providers import region_fallback
from runners.providers.base import Provider, ProvisionError


class Scripted(Provider):
    """poll_ready answers come from `polls[region]`; teardown answers from `deletes`."""

    def __init__(self, polls, deletes=None, interrupt_in=None):
        super().__init__(experiment=None)
        self.polls, self.deletes = polls, deletes or []
        self.interrupt_in, self.calls = interrupt_in, []

    def provision(self, run_id, region):
        self.calls.append(("provision", region))
        return {"region": region, "endpoint_name": f"ep-{region}", "timeline": []}

    def poll_ready(self, placement):
        region = placement["region"]
        self.calls.append(("poll", region))
        if region == self.interrupt_in:
            raise KeyboardInterrupt
        state = self.polls[region].pop(0)
        outcome = {"state": state, "placement": placement}
        if state == "failed":
            outcome["error"] = ProvisionError("capacity", f"{region} full").to_dict()
        return outcome

    def client(self, placement):
        raise NotImplementedError

    def teardown(self, placement):
        self.calls.append(("teardown", placement["region"]))
        state = self.deletes.pop(0) if self.deletes else "deleted"
        return {"state": state, "placement": placement, "reason": "still Creating"}


def test_waiting_is_bounded_in_looks_and_a_timeout_is_fatal():
    provider = Scripted({"r1": ["waiting"] * 100})
    sleeps = []
    outcome = region_fallback.wait_until_ready(
        provider, {"region": "r1"}, timeout_s=300, interval_s=60, sleep=sleeps.append)
    assert outcome["state"] == "failed"
    assert outcome["error"]["kind"] == "fatal"
    assert outcome["error"]["message"] == "r1: not ready after 300 s"
    assert len([c for c in provider.calls if c[0] == "poll"]) == 6
    assert sleeps == [60] * 5


def test_ctrl_c_mid_wait_still_tears_down_and_says_what_is_left():
    provider = Scripted({}, deletes=["retry-later"], interrupt_in="r1")
    with pytest.raises(KeyboardInterrupt) as caught:
        region_fallback.place(provider, "run", ["r1", "r2"], ready_timeout_s=60,
                              sleep=lambda s: None)
    assert provider.calls == [("provision", "r1"), ("poll", "r1"), ("teardown", "r1")]
    assert caught.value.__notes__ == ["r1: ep-r1 not deleted yet (still Creating)"]


def test_capacity_moves_on_and_the_ready_region_carries_the_refusals():
    provider = Scripted({"r1": ["waiting", "failed"], "r2": ["ready"]})
    placement = region_fallback.place(provider, "run", ["r1", "r2", "r3"], ready_timeout_s=600,
                                      sleep=lambda s: None)
    assert placement["region"] == "r2"
    assert placement["refused"] == [{"region": "r1", "kind": "capacity", "message": "r1 full",
                                     "teardown": "deleted", "timeline": []}]
    assert ("provision", "r3") not in provider.calls
    assert provider.calls.index(("teardown", "r1")) < provider.calls.index(("provision", "r2"))
