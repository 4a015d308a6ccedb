"""The watchdog's sweep against moto in three regions: what it deletes, what it keeps, and
how it behaves when a resource is in transition, a call is throttled or a delete fails."""

from __future__ import annotations

import pytest
from botocore.awsrequest import AWSResponse

from runners.watchdog import sweep as watchdog
from runners.watchdog.clients import Clients
from tests.runners.watchdog_fixtures import aws, world  # noqa: F401 - fixtures
from tests.runners.watchdog_world import EXPIRED, NOW, REGIONS, UNEXPIRED, run_tags


def live(_tags):
    return "RUNNING"


def sweep(clients=None, **kwargs):
    kwargs.setdefault("run_status", live)
    return watchdog.sweep(REGIONS, clients=clients or Clients(), now=NOW, **kwargs)


def by_id(report) -> dict[tuple[str, str], dict]:
    return {(line["kind"], line["id"]): line for line in report.lines}


def _populate(world) -> dict[str, dict]:
    """In every region: an expired endpoint, instance and fleet; an unexpired endpoint and
    instance of a live run; an untagged endpoint and instance that look expired."""
    made = {}
    for region in REGIONS:
        world.endpoint(region, f"old-{region}", run_tags(f"run-old-{region}", EXPIRED))
        world.endpoint(region, f"new-{region}", run_tags(f"run-new-{region}", UNEXPIRED))
        world.endpoint(region, f"foreign-{region}",
                       run_tags("someone-else", EXPIRED, managed=False))
        made[region] = {
            "old_instance": world.instance(region, run_tags(f"run-old-{region}", EXPIRED)),
            "new_instance": world.instance(region, run_tags(f"run-new-{region}", UNEXPIRED)),
            "foreign_instance": world.instance(region, run_tags("x", EXPIRED, managed=False)),
            "bare_instance": world.instance(region, {}),
            "old_fleet": world.fleet(region, run_tags(f"run-fleet-{region}", EXPIRED)),
        }
    return made


def test_expired_deleted_unexpired_and_untagged_kept_in_every_region(world):
    made = _populate(world)
    report = sweep()
    lines = by_id(report)
    for region in REGIONS:
        assert world.endpoints(region) == {f"new-{region}", f"foreign-{region}"}
        # the expired endpoint's own config and model go too; the untagged ones stay
        assert world.endpoint_configs(region) == {f"new-{region}", f"foreign-{region}"}
        assert world.models(region) == {f"new-{region}", f"foreign-{region}"}
        left = world.live_instances(region)
        assert {made[region]["new_instance"], made[region]["foreign_instance"],
                made[region]["bare_instance"]} <= left
        assert made[region]["old_instance"] not in left
        assert world.fleet_states(region)[made[region]["old_fleet"]] == "deleted_terminating"
        assert lines[("sagemaker-endpoint", f"old-{region}")]["action"] == "deleted"
        assert lines[("sagemaker-endpoint", f"old-{region}")]["reason"] == "expired 1.00 h ago"
        kept = lines[("sagemaker-endpoint", f"new-{region}")]
        assert (kept["action"], kept["reason"]) == ("kept", "expires in 2.00 h; run RUNNING")
        assert ("sagemaker-endpoint", f"foreign-{region}") not in lines  # never even listed
    # per region: endpoint, config, model, fleet, instance; the fleet's own instance is
    # already shutting down when instances are listed, so it is not listed again. Kept:
    # the live run's endpoint, config, model and instance
    assert report.counts() == {"deleted": 15, "would-delete": 0, "deferred": 0,
                               "kept": 12, "refused": 0, "error": 0}
    assert {line["region"] for line in report.lines} == set(REGIONS)


def test_run_that_ended_is_deleted_before_it_expires(world):
    asked = []

    def status(found):
        asked.append(found["benchstack:run-id"])
        return {"run-failed": "FAILED", "run-aborted": "ABORTED",
                "run-timed-out": "TIMED_OUT"}.get(found["benchstack:run-id"], "RUNNING")

    for run in ("run-failed", "run-aborted", "run-timed-out", "run-live"):
        world.endpoint("us-east-2", run, run_tags(run, UNEXPIRED))
    report = sweep(run_status=status)
    assert world.endpoints("us-east-2") == {"run-live"}
    line = by_id(report)[("sagemaker-endpoint", "run-aborted")]
    assert (line["action"], line["reason"]) == ("deleted", "run ended: execution ABORTED")
    assert "run-live" in asked


def test_expired_resource_is_deleted_without_asking_about_its_run(world):
    world.endpoint("us-west-2", "old", run_tags("run-old", EXPIRED))

    def must_not_be_asked(_tags):
        raise AssertionError("expiry alone decides")

    sweep(run_status=must_not_be_asked)
    assert world.endpoints("us-west-2") == set()


@pytest.mark.parametrize("bad", ["tomorrow", "2026-12-03T10:00:00", None])
def test_bad_or_missing_expiry_is_reported_and_kept(world, bad):
    world.endpoint("us-east-1", "odd", run_tags("run-odd", bad))
    report = sweep(run_status=lambda _t: "FAILED")  # even an ended run does not override
    assert world.endpoints("us-east-1") == {"odd"}
    line = by_id(report)[("sagemaker-endpoint", "odd")]
    assert line["action"] == "kept" and line["attention"] is True
    assert "a person must decide" in line["reason"]


def _force_status(clients, region: str, status_by_name: dict[str, str]) -> None:
    """moto's endpoints are InService at once: rewrite ListEndpoints' answer instead."""
    def rewrite(parsed, **_):
        for endpoint in parsed.get("Endpoints", []):
            endpoint["EndpointStatus"] = status_by_name.get(endpoint["EndpointName"],
                                                            endpoint["EndpointStatus"])
    clients.get("sagemaker", region).meta.events.register(
        "after-call.sagemaker.ListEndpoints", rewrite)


def _count_calls(client, operation: str) -> list:
    calls = []
    client.meta.events.register(f"before-call.{client.meta.service_model.endpoint_prefix}."
                                f"{operation}", lambda **kw: calls.append(kw))
    return calls


def test_creating_endpoint_is_deferred_alerted_then_deleted_by_a_later_sweep(world):
    from runners.watchdog import report as watchdog_report

    world.endpoint("us-east-2", "stuck", run_tags("run-stuck", EXPIRED))
    clients = Clients()
    _force_status(clients, "us-east-2", {"stuck": "Creating"})
    deletes = _count_calls(clients.get("sagemaker", "us-east-2"), "DeleteEndpoint")
    first = sweep(clients)
    lines = by_id(first)
    endpoint = lines[("sagemaker-endpoint", "stuck")]
    assert endpoint["action"] == "deferred" and endpoint["attention"] is True
    assert "Creating for" in endpoint["reason"] and "later sweep" in endpoint["reason"]
    assert deletes == []  # a Creating endpoint refuses deletion: not even tried
    # its config and model are kept while the endpoint exists
    assert lines[("sagemaker-endpoint-config", "stuck")]["action"] == "kept"
    assert lines[("sagemaker-model", "stuck")]["action"] == "kept"
    assert world.endpoints("us-east-2") == {"stuck"}
    subject, body = watchdog_report.alert_message(first)
    assert subject == "benchstack watchdog: 1 resource(s) need attention"
    assert "us-east-2 sagemaker-endpoint stuck [Creating]: deferred" in body

    second = sweep(Clients())  # it left Creating (moto: InService)
    assert by_id(second)[("sagemaker-endpoint", "stuck")]["action"] == "deleted"
    assert world.endpoints("us-east-2") == set()
    assert world.endpoint_configs("us-east-2") == set() and world.models("us-east-2") == set()


def test_deleting_endpoint_is_left_alone(world):
    world.endpoint("us-west-2", "going", run_tags("run-going", EXPIRED))
    clients = Clients()
    _force_status(clients, "us-west-2", {"going": "Deleting"})
    deletes = _count_calls(clients.get("sagemaker", "us-west-2"), "DeleteEndpoint")
    line = by_id(sweep(clients))[("sagemaker-endpoint", "going")]
    assert (line["action"], line["reason"]) == ("kept", "already Deleting")
    assert deletes == []


def _http_error(status: int, code: str, message: str, *, ec2: bool = False) -> AWSResponse:
    """An error response as the service would send it (EC2 speaks XML, SageMaker JSON)."""
    body = (f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message>"
            f"</Error></Errors></Response>" if ec2
            else f'{{"__type": "{code}", "message": "{message}"}}').encode()
    return AWSResponse("https://aws.example/", status, {}, _Raw(body))


class _Raw:
    def __init__(self, body: bytes):
        self._body = body

    def stream(self, **_):
        yield self._body


def _answer_first(client, operation: str, answer) -> list:
    """Put `answer(request)`'s response ahead of moto's for `operation`. moto still
    handles the request (every before-send handler runs), so use it on idempotent calls."""
    sent = []

    def hook(request, **_):
        sent.append(request)
        return answer(request, len(sent))

    client.meta.events.register_first(
        f"before-send.{client.meta.service_model.endpoint_prefix}.{operation}", hook)
    return sent


def _throttle_first(request, attempt: int):
    if attempt > 1:
        return None
    if "ec2." in request.url:
        return _http_error(503, "RequestLimitExceeded", "Request limit exceeded.", ec2=True)
    return _http_error(400, "ThrottlingException", "Rate exceeded")


def test_throttled_calls_are_retried_with_backoff(world):
    world.endpoint("us-east-1", "old", run_tags("run-old", EXPIRED))
    instance = world.instance("us-east-1", run_tags("run-i", EXPIRED))
    clients = Clients()
    lists = _answer_first(clients.get("sagemaker", "us-east-1"), "ListEndpoints",
                          _throttle_first)
    terminates = _answer_first(clients.get("ec2", "us-east-1"), "TerminateInstances",
                               _throttle_first)
    lines = by_id(sweep(clients))
    assert len(lists) == 2 and len(terminates) == 2  # one throttled attempt, one retry each
    assert lines[("sagemaker-endpoint", "old")]["action"] == "deleted"
    assert lines[("ec2-instance", instance)]["action"] == "deleted"
    assert world.endpoints("us-east-1") == set()
    assert instance not in world.live_instances("us-east-1")


def test_a_failing_delete_does_not_stop_the_sweep(world):
    for name in ("a-broken", "b-fine", "c-fine"):
        world.endpoint("us-east-2", name, run_tags(f"run-{name}", EXPIRED))
    instance = world.instance("us-east-2", run_tags("run-i", EXPIRED))
    clients = Clients()

    def refuse_a(params, **_):
        # before-call answers instead of moto, so the endpoint really stays
        if b"a-broken" in params["body"]:
            error = {"Code": "ValidationException", "Message": "Cannot delete"}
            return (_http_error(400, "ValidationException", "Cannot delete"),
                    {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}})
        return None

    clients.get("sagemaker", "us-east-2").meta.events.register(
        "before-call.sagemaker.DeleteEndpoint", refuse_a)
    report = sweep(clients)
    lines = by_id(report)
    refused = lines[("sagemaker-endpoint", "a-broken")]
    assert refused["action"] == "refused" and "Cannot delete" in refused["reason"]
    assert refused["attention"] is True
    assert world.endpoints("us-east-2") == {"a-broken"}
    assert instance not in world.live_instances("us-east-2")
    # the refused endpoint still exists, so its config and model wait for it
    assert lines[("sagemaker-endpoint-config", "a-broken")]["action"] == "kept"
    assert lines[("sagemaker-endpoint-config", "b-fine")]["action"] == "deleted"
    assert report.counts()["refused"] == 1


def test_a_region_that_cannot_be_listed_does_not_stop_the_others(world):
    world.endpoint("us-east-2", "old", run_tags("run-old", EXPIRED))
    world.endpoint("us-west-2", "old", run_tags("run-old", EXPIRED))
    clients = Clients()

    _answer_first(clients.get("sagemaker", "us-west-2"), "ListEndpoints",
                  lambda *_: _http_error(403, "AccessDeniedException", "not allowed"))
    report = sweep(clients)
    errors = [line for line in report.lines if line["action"] == "error"]
    assert [(e["region"], e["kind"]) for e in errors] == [("us-west-2", "sagemaker-endpoint")]
    assert "AccessDenied" in errors[0]["reason"]
    assert world.endpoints("us-east-2") == set()
    assert world.endpoints("us-west-2") == {"old"}  # nothing deleted blind


def test_dry_run_deletes_nothing_and_reports_what_it_would(world):
    made = _populate(world)
    clients = Clients()
    mutations = [_count_calls(clients.get(service, region), operation)
                 for region in REGIONS
                 for service, operation in [("sagemaker", "DeleteEndpoint"),
                                            ("sagemaker", "DeleteEndpointConfig"),
                                            ("sagemaker", "DeleteModel"),
                                            ("ec2", "TerminateInstances"),
                                            ("ec2", "DeleteFleets")]]
    report = sweep(clients, dry_run=True)
    assert all(calls == [] for calls in mutations)
    for region in REGIONS:
        assert len(world.endpoints(region)) == 3
        assert made[region]["old_instance"] in world.live_instances(region)
        assert world.fleet_states(region)[made[region]["old_fleet"]] == "active"
    lines = by_id(report)
    assert lines[("sagemaker-endpoint", "old-us-east-1")]["action"] == "would-delete"
    assert lines[("sagemaker-endpoint-config", "old-us-east-1")]["action"] == "would-delete"
    assert report.counts()["deleted"] == 0 and report.counts()["would-delete"] >= 15
    assert all(line["dry_run"] for line in report.lines)


def test_a_second_sweep_finds_nothing_left_to_delete(world):
    _populate(world)
    sweep()
    again = sweep()
    assert again.counts()["deleted"] == 0
    assert again.counts()["refused"] == again.counts()["error"] == 0


def test_parallel_and_sequential_sweeps_agree(world):
    _populate(world)
    def outcome(report):
        return sorted((l["region"], l["kind"], l["id"], l["action"]) for l in report.lines)

    assert outcome(sweep(dry_run=True)) == outcome(sweep(dry_run=True, parallel=False))


def test_out_of_time_sweep_defers_instead_of_deleting(world):
    world.endpoint("us-east-1", "old", run_tags("run-old", EXPIRED))
    line = by_id(sweep(deadline=0.0))[("sagemaker-endpoint", "old")]
    assert line["action"] == "deferred" and "out of time" in line["reason"]
    assert world.endpoints("us-east-1") == {"old"}
