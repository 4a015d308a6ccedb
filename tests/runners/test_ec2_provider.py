"""The EC2 provider: EC2 against recorded API shapes (botocore Stubber: moto places the
first override and cannot refuse capacity), SSM on moto, and a real HTTP engine stand-in
on 127.0.0.1."""

from __future__ import annotations

import json
import random
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from runners import experiment
from runners.providers import for_experiment
from runners.providers.base import ProvisionError
from runners.providers.ec2 import api as ec2_api
from runners.providers.ec2 import fleet as ec2_fleet
from runners.providers.ec2.provider import _CLIENT_CONFIG, Ec2Provider

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
NOW = datetime(2026, 12, 3, 0, 0, tzinfo=timezone.utc)
AZS = {"us-east-2": ["us-east-2a", "us-east-2b", "us-east-2c"],
       "us-east-1": ["us-east-1a", "us-east-1b"], "us-west-2": ["us-west-2a"]}


def load(name):
    return experiment.load(EXPERIMENTS / f"{name}.toml")


class Cloud:
    """Stubbed EC2 and SSM clients per region, and the provider wired to them."""

    def __init__(self, exp, **provider_kwargs):
        self.exp, self.sleeps, self.clients, self.stubs = exp, [], {}, {}
        self.provider = Ec2Provider(exp, clients=self.client, sleep=self.sleeps.append,
                                    rng=random.Random(7), now=lambda: NOW, **provider_kwargs)

    def client(self, service, region):
        """EC2: a stubbed client made on first use (an unexpected call fails). SSM: moto."""
        if service == "ssm":
            if ("ssm", region) not in self.clients:
                self.clients[("ssm", region)] = boto3.client(
                    "ssm", region_name=region, aws_access_key_id="test",
                    aws_secret_access_key="test")
            return self.clients[("ssm", region)]
        if (service, region) not in self.clients:
            client = boto3.client(service, region_name=region, config=_CLIENT_CONFIG,
                                  aws_access_key_id="test", aws_secret_access_key="test")
            self.clients[(service, region)] = client
            self.stubs[(service, region)] = Stubber(client)
            self.stubs[(service, region)].activate()
        return self.clients[(service, region)]

    def stub(self, service, region):
        self.client(service, region)
        return self.stubs[(service, region)]

    def ec2(self, region):
        return self.stub("ec2", region)

    def expect_lookup(self, region, offered=None, throttled=0):
        """The SSM reads, DescribeSubnets and DescribeInstanceTypeOfferings of a region."""
        types = [t for t in self.exp.ec2.instance_types]
        ssm = self.client("ssm", region)  # what the two stacks publish, on moto
        ids = {t: f"lt-{region}-{t}" for t in types}
        ssm.put_parameter(Name=f"/benchstack/ec2/{self.exp.name}/launch-templates",
                          Value=json.dumps(ids), Type="String", Overwrite=True)
        subnets = [f"subnet-{az}" for az in AZS[region]]
        ssm.put_parameter(Name="/benchstack/foundation/public-subnet-ids",
                          Value=",".join(subnets), Type="String", Overwrite=True)
        self.ec2(region).add_response(
            "describe_subnets",
            {"Subnets": [{"SubnetId": f"subnet-{az}", "AvailabilityZone": az}
                         for az in reversed(AZS[region])]},
            {"SubnetIds": subnets})
        offered = offered if offered is not None else [(t, az) for t in types
                                                       for az in AZS[region]]
        for _ in range(throttled):
            self.ec2(region).add_client_error("describe_instance_type_offerings",
                                              "RequestLimitExceeded", http_status_code=503)
        self.ec2(region).add_response(
            "describe_instance_type_offerings",
            {"InstanceTypeOfferings": [{"InstanceType": t, "LocationType": "availability-zone",
                                        "Location": az} for t, az in offered]},
            {"LocationType": "availability-zone",
             "Filters": [{"Name": "instance-type", "Values": ANY}]})

    def expect_fleet(self, region, response, params=None):
        self.ec2(region).add_response("create_fleet", {"FleetId": f"fleet-{region}", **response},
                                      params)

    def expect_teardown(self, region, instance_id=None):
        self.ec2(region).add_response(
            "delete_fleets",
            {"SuccessfulFleetDeletions": [{"FleetId": f"fleet-{region}",
                                           "CurrentFleetState": "deleted_terminating"}],
             "UnsuccessfulFleetDeletions": []},
            {"FleetIds": [f"fleet-{region}"], "TerminateInstances": True})
        if instance_id:
            self.ec2(region).add_response("terminate_instances", {"TerminatingInstances": []},
                                          {"InstanceIds": [instance_id]})

    def verify(self):
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


def refusal(itype, az, code, message="not now"):
    return {"LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": itype,
                                                         "SubnetId": f"subnet-{az}"}},
            "Lifecycle": "on-demand", "ErrorCode": code, "ErrorMessage": message}


def placed(itype, az, instance_id="i-0123456789abcdef0"):
    return {"LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": itype,
                                                         "SubnetId": f"subnet-{az}"}},
            "Lifecycle": "on-demand", "InstanceIds": [instance_id], "InstanceType": itype}


def place(provider, run_id, regions):
    """Regions in order, as the provision phase walks them: capacity moves on."""
    tried = []
    for region in regions:
        try:
            return provider.provision(run_id, region), tried
        except ProvisionError as exc:
            tried.append({"region": region, **exc.to_dict()})
            if exc.kind != ProvisionError.CAPACITY:
                raise
    raise ProvisionError(ProvisionError.CAPACITY, "nowhere", {"tried": tried})


@pytest.fixture(scope="module", autouse=True)
def _moto():
    """One moto for the module: its SSM loads AWS's public parameters once per region."""
    with mock_aws():
        yield


def test_the_registry_builds_the_ec2_provider():
    assert isinstance(for_experiment(load("e2b-emb4-g6"), clients=lambda s, r: None),
                      Ec2Provider)


def test_every_zone_of_the_first_region_refuses_and_the_second_region_places():
    cloud = Cloud(load("e2b-emb4-g6"))
    types = ["g6.xlarge", "g6.2xlarge"]
    cloud.expect_lookup("us-east-2")
    cloud.expect_fleet("us-east-2", {"Errors": [
        refusal(t, az, "InsufficientInstanceCapacity") for t in types for az in AZS["us-east-2"]
    ], "Instances": []})
    cloud.expect_teardown("us-east-2")
    cloud.expect_lookup("us-east-1")
    cloud.expect_fleet("us-east-1", {
        "Errors": [refusal("g6.xlarge", "us-east-1a", "InsufficientInstanceCapacity")],
        "Instances": [placed("g6.xlarge", "us-east-1b")]})

    placement, tried = place(cloud.provider, "run-1", ["us-east-2", "us-east-1", "us-west-2"])

    cloud.verify()
    assert [t["region"] for t in tried] == ["us-east-2"]
    assert tried[0]["kind"] == "capacity"
    refused_1 = {(r["instance_type"], r["az"]) for r in tried[0]["detail"]["refused"]}
    assert refused_1 == {(t, az) for t in types for az in AZS["us-east-2"]}
    assert (placement["region"], placement["az"], placement["instance_type"]) == (
        "us-east-1", "us-east-1b", "g6.xlarge")
    assert placement["instance_id"] == "i-0123456789abcdef0"
    assert placement["fleet_id"] == "fleet-us-east-1"
    assert placement["launch_template_id"] == "lt-us-east-1-g6.xlarge"
    assert placement["refused"] == [{"instance_type": "g6.xlarge", "az": "us-east-1a",
                                     "subnet_id": "subnet-us-east-1a",
                                     "code": "InsufficientInstanceCapacity",
                                     "kind": "capacity", "message": "not now"}]
    json.dumps(placement)  # a Step Functions state carries it


def test_the_fleet_request_tries_every_type_in_every_zone_in_priority_order():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-2")
    cloud.expect_fleet("us-east-2", {"Errors": [], "Instances": [placed("g6.xlarge",
                                                                         "us-east-2a")]})
    cloud.provider.provision("run-2", "us-east-2")
    request = cloud.clients[("ec2", "us-east-2")]._stub_request  # set below by the hook
    order = [(o["InstanceType"], o["SubnetId"], o["Priority"])
             for c in request["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert order == [(t, f"subnet-{az}", float(i)) for i, (t, az) in enumerate(
        (t, az) for t in ["g6.xlarge", "g6.2xlarge"] for az in AZS["us-east-2"])]
    assert request["Type"] == "instant"
    assert request["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    assert request["TargetCapacitySpecification"]["TotalTargetCapacity"] == 1
    assert request["ClientToken"] == "run-2-us-east-2"
    tag_sets = {s["ResourceType"]: {t["Key"]: t["Value"] for t in s["Tags"]}
                for s in request["TagSpecifications"]}
    assert set(tag_sets) == {"fleet", "instance", "volume"}
    assert tag_sets["instance"] == {"benchstack:managed": "true",
                                    "benchstack:experiment": "e2b-emb4-g6",
                                    "benchstack:run-id": "run-2",
                                    "benchstack:expires-at": "2026-12-03T03:00:00Z"}


@pytest.fixture(autouse=True)
def _record_create_fleet(monkeypatch):
    """Keep the last CreateFleet parameters on the client, to assert on their order."""
    original = ec2_api.call

    def recording(operation, /, **kwargs):
        if getattr(operation, "__name__", "") == "create_fleet":
            operation.__self__._stub_request = {k: v for k, v in kwargs.items()
                                                if k not in ("sleep", "rng")}
        return original(operation, **kwargs)

    monkeypatch.setattr(ec2_api, "call", recording)


def test_spot_asks_for_capacity_optimized_prioritized():
    chosen = [ec2_fleet.Candidate("g6.xlarge", "subnet-a", "us-east-1a", "lt-1")]
    request = ec2_fleet.fleet_request(chosen, market="spot", tags={"k": "v"}, client_token="t")
    assert request["SpotOptions"]["AllocationStrategy"] == "capacity-optimized-prioritized"
    assert request["TargetCapacitySpecification"]["SpotTargetCapacity"] == 1
    assert "OnDemandOptions" not in request


def test_a_quota_error_stops_with_the_quota_named_and_no_other_region_is_tried():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-2")
    cloud.expect_fleet("us-east-2", {"Errors": [
        refusal("g6.xlarge", "us-east-2a", "VcpuLimitExceeded",
                "You have requested more vCPU capacity than your current vCPU limit of 0."),
        refusal("g6.xlarge", "us-east-2b", "InsufficientInstanceCapacity"),
    ], "Instances": []})
    cloud.expect_teardown("us-east-2")
    with pytest.raises(ProvisionError) as caught:
        place(cloud.provider, "run-3", ["us-east-2", "us-east-1"])
    cloud.verify()  # us-east-1 had nothing stubbed: any call there would have failed
    error = caught.value
    assert error.kind == "quota"
    assert "VcpuLimitExceeded for g6.xlarge in us-east-2" in str(error)
    assert '"Running On-Demand G and VT instances"' in str(error)
    assert len(error.detail["refused"]) == 2


def test_a_fatal_error_in_the_request_itself_stops():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-2")
    cloud.ec2("us-east-2").add_client_error("create_fleet", "InvalidLaunchTemplateId.NotFound",
                                            "no such template")
    with pytest.raises(ProvisionError) as caught:
        cloud.provider.provision("run-4", "us-east-2")
    assert caught.value.kind == "fatal"
    assert "InvalidLaunchTemplateId.NotFound" in str(caught.value)


def test_a_missing_stack_says_which_to_deploy():
    cloud = Cloud(load("e2b-emb4-g6"))
    ssm = cloud.client("ssm", "us-west-2")
    ssm.delete_parameters(Names=["/benchstack/ec2/e2b-emb4-g6/launch-templates",
                                 "/benchstack/foundation/public-subnet-ids"])
    with pytest.raises(ProvisionError, match="deploy Benchstack-Exp-e2b-emb4-g6-us-west-2"):
        cloud.provider.provision("run-5", "us-west-2")


def test_the_catalog_skips_a_region_without_calling_aws():
    cloud = Cloud(load("e2b-fp16-g5g"))
    with pytest.raises(ProvisionError) as caught:
        cloud.provider.provision("run-6", "us-east-2")  # g5g is not offered in us-east-2
    cloud.verify()
    assert caught.value.kind == "capacity"
    assert {s["instance_type"] for s in caught.value.detail["skipped"]} == {
        "g5g.2xlarge", "g5g.4xlarge"}


def test_offerings_leave_out_zones_without_the_type():
    cloud = Cloud(load("e2b-neuron-trn1"))
    cloud.expect_lookup("us-east-2", offered=[("trn1.2xlarge", "us-east-2c")])
    cloud.expect_fleet("us-east-2", {"Errors": [], "Instances": [placed("trn1.2xlarge",
                                                                         "us-east-2c")]})
    placement = cloud.provider.provision("run-7", "us-east-2")
    request = cloud.clients[("ec2", "us-east-2")]._stub_request
    overrides = [o for c in request["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert [o["SubnetId"] for o in overrides] == ["subnet-us-east-2c"]
    assert placement["skipped"] == [{
        "reason": "not offered in this AZ (DescribeInstanceTypeOfferings)",
        "where": ["trn1.2xlarge@us-east-2a", "trn1.2xlarge@us-east-2b"]}]
    assert placement["az"] == "us-east-2c"


def test_no_offered_zone_is_a_capacity_miss_without_a_fleet():
    cloud = Cloud(load("e2b-neuron-trn1"))
    cloud.expect_lookup("us-east-2", offered=[])
    with pytest.raises(ProvisionError) as caught:
        cloud.provider.provision("run-8", "us-east-2")
    cloud.verify()
    assert caught.value.kind == "capacity"


def test_throttling_is_retried_with_backoff_and_jitter():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-2", throttled=2)
    cloud.expect_fleet("us-east-2", {"Errors": [], "Instances": [placed("g6.xlarge",
                                                                         "us-east-2a")]})
    placement = cloud.provider.provision("run-9", "us-east-2")
    cloud.verify()
    assert placement["az"] == "us-east-2a"
    assert len(cloud.sleeps) == 2
    assert 0 <= cloud.sleeps[0] <= ec2_api.BASE_DELAY_S
    assert 0 <= cloud.sleeps[1] <= 2 * ec2_api.BASE_DELAY_S


def test_throttling_gives_up_after_bounded_attempts():
    cloud = Cloud(load("e2b-emb4-g6"))
    client = cloud.client("ec2", "us-east-1")
    for _ in range(3):
        cloud.ec2("us-east-1").add_client_error("describe_subnets", "RequestLimitExceeded")
    sleeps = []
    with pytest.raises(Exception, match="RequestLimitExceeded"):
        ec2_api.call(client.describe_subnets, attempts=3, sleep=sleeps.append,
                     rng=random.Random(1))
    assert len(sleeps) == 2


def test_backoff_is_capped():
    rng = random.Random(3)
    delays = [ec2_api.backoff_delay_s(20, rng) for _ in range(50)]
    assert max(delays) <= ec2_api.MAX_DELAY_S and min(delays) >= 0


# ---------------------------------------------------------------- readiness and teardown


class Engine:
    """An engine stand-in on 127.0.0.1: /health and /v1/models with chosen answers."""

    def __init__(self, health=200, models=("gemma-4-e2b",)):
        self.health, self.models = health, models
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/health":
                    status, body = engine.health, b""
                elif self.path == "/v1/models":
                    status = 200
                    body = json.dumps({"object": "list", "data": [
                        {"id": m, "object": "model"} for m in engine.models]}).encode()
                else:
                    status, body = 404, b""
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def engine():
    e = Engine()
    yield e
    e.close()


def describe(cloud, region, state="running", ip="10.42.0.7"):
    cloud.ec2(region).add_response("describe_instances", {"Reservations": [{"Instances": [{
        "InstanceId": "i-0123456789abcdef0", "State": {"Name": state},
        "PrivateIpAddress": ip, "StateReason": {"Message": "Client.UserInitiatedShutdown"},
    }]}]}, {"InstanceIds": ["i-0123456789abcdef0"]})


def placed_in(cloud, region="us-east-1"):
    cloud.expect_lookup(region)
    cloud.expect_fleet(region, {"Errors": [], "Instances": [placed("g6.xlarge", f"{region}a")]})
    return json.loads(json.dumps(cloud.provider.provision("run-10", region)))


def test_ready_once_health_and_models_answer_with_the_served_model(engine):
    cloud = Cloud(load("e2b-emb4-g6"), endpoint=engine.url)
    placement = placed_in(cloud)
    describe(cloud, "us-east-1", state="pending")
    assert cloud.provider.poll_ready(placement)["state"] == "waiting"
    engine.health = 503
    describe(cloud, "us-east-1")
    looked = cloud.provider.poll_ready(placement)
    assert looked["state"] == "waiting" and "503" in looked["message"]
    engine.health = 200
    describe(cloud, "us-east-1")
    looked = cloud.provider.poll_ready(placement)
    assert looked["state"] == "ready"
    assert looked["placement"]["base_url"] == engine.url
    assert looked["placement"]["private_ip"] == "10.42.0.7"


def test_an_engine_serving_another_model_fails(engine):
    engine.models = ("some-other-model",)
    cloud = Cloud(load("e2b-emb4-g6"), endpoint=engine.url)
    placement = placed_in(cloud)
    describe(cloud, "us-east-1")
    looked = cloud.provider.poll_ready(placement)
    assert looked["state"] == "failed" and "some-other-model" in looked["message"]


def test_a_terminated_instance_fails_readiness():
    cloud = Cloud(load("e2b-emb4-g6"))
    placement = placed_in(cloud)
    describe(cloud, "us-east-1", state="terminated")
    looked = cloud.provider.poll_ready(placement)
    assert looked["state"] == "failed" and "terminated" in looked["message"]


def test_the_private_address_is_used_by_default_and_nothing_listening_is_waiting():
    cloud = Cloud(load("e2b-emb4-g6"))
    placement = placed_in(cloud)
    describe(cloud, "us-east-1", ip="127.0.0.1")  # a closed port on this machine
    looked = cloud.provider.poll_ready(placement)
    assert looked["placement"]["base_url"] == "http://127.0.0.1:8000"
    assert looked["state"] == "waiting"


def test_provision_records_the_private_address_so_the_in_vpc_look_calls_no_ec2_api(engine):
    """The in-VPC runner has no route to the EC2 API: with the address recorded at
    provision, readiness is the engine's answer alone."""
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-1")
    cloud.expect_fleet("us-east-1", {"Errors": [], "Instances": [placed("g6.xlarge",
                                                                        "us-east-1a")]})
    describe(cloud, "us-east-1", state="pending", ip="127.0.0.1")
    placement = json.loads(json.dumps(cloud.provider.provision("run-11", "us-east-1")))
    assert placement["private_ip"] == "127.0.0.1"
    placement["port"] = int(engine.url.rsplit(":", 1)[1])  # the stand-in's port
    looked = cloud.provider.poll_ready(placement)  # no DescribeInstances is stubbed
    assert looked["state"] == "ready" and looked["placement"]["base_url"] == engine.url
    cloud.ec2("us-east-1").assert_no_pending_responses()


def test_a_bad_endpoint_setting_is_refused():
    with pytest.raises(ValueError, match="private, public or a URL"):
        Ec2Provider(load("e2b-emb4-g6"), endpoint="vpc")


LATER_PHASES = ["await_ready", "warmup", "decode", "stream", "load", "quality", "toolcall",
                "cost"]


@pytest.mark.parametrize("failing", LATER_PHASES)
def test_teardown_runs_after_a_failure_in_any_later_phase(engine, failing):
    cloud = Cloud(load("e2b-emb4-g6"), endpoint=engine.url)
    placement = placed_in(cloud)
    if failing != "await_ready":
        describe(cloud, "us-east-1")
    cloud.expect_teardown("us-east-1", instance_id="i-0123456789abcdef0")
    torn = []

    def run_phase(name):
        if name == failing:
            raise RuntimeError(f"{name} broke")
        if name == "await_ready":
            assert cloud.provider.poll_ready(placement)["state"] == "ready"

    with pytest.raises(RuntimeError, match=f"{failing} broke"):
        try:
            for name in LATER_PHASES:
                run_phase(name)
        finally:
            torn.append(cloud.provider.teardown(placement))
    cloud.verify()  # DeleteFleets and TerminateInstances were both called
    assert torn[0]["state"] == "deleted"


@pytest.mark.parametrize("raised,expected", [
    (KeyError("surprise"), ProvisionError),  # an answer we cannot read: fatal
    (KeyboardInterrupt(), KeyboardInterrupt),  # Ctrl-C or SIGTERM: passed on
])
def test_a_failure_after_launching_deletes_the_fleet_first(monkeypatch, raised, expected):
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-1")
    cloud.expect_fleet("us-east-1", {"Errors": [], "Instances": [placed("g6.xlarge",
                                                                         "us-east-1a")]})
    cloud.expect_teardown("us-east-1")

    def broken(*_):
        raise raised

    monkeypatch.setattr(ec2_fleet, "read_response", broken)
    with pytest.raises(expected) as caught:
        cloud.provider.provision("run-11", "us-east-1")
    cloud.verify()  # DeleteFleets was called
    if expected is ProvisionError:
        assert caught.value.kind == "fatal" and "surprise" in str(caught.value)
        assert "placement" not in caught.value.detail  # deleted: nothing left for teardown


def test_a_refused_region_whose_fleet_cannot_be_deleted_hands_it_to_teardown():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.expect_lookup("us-east-1")
    cloud.expect_fleet("us-east-1", {"Errors": [
        refusal("g6.xlarge", "us-east-1a", "InsufficientInstanceCapacity")], "Instances": []})
    cloud.ec2("us-east-1").add_client_error("delete_fleets", "UnauthorizedOperation")
    with pytest.raises(ProvisionError) as caught:
        cloud.provider.provision("run-12", "us-east-1")
    cloud.verify()
    assert caught.value.kind == "capacity"
    assert caught.value.detail["placement"]["fleet_id"] == "fleet-us-east-1"
    assert caught.value.detail["teardown"]["state"] == "retry-later"


@pytest.mark.parametrize("fleet_error,state", [
    ("unexpectedError", "retry-later"),  # must be asked again, not dropped
    ("fleetIdDoesNotExist", "deleted"),  # already gone
    ("fleetNotInDeletableState", "deleted"),  # already deleted by an earlier call
])
def test_teardown_judges_what_delete_fleets_answers(fleet_error, state):
    cloud = Cloud(load("e2b-emb4-g6"))
    placement = {"region": "us-east-1", "fleet_id": "fleet-x", "instance_id": "i-1"}
    cloud.ec2("us-east-1").add_response("delete_fleets", {
        "SuccessfulFleetDeletions": [], "UnsuccessfulFleetDeletions": [{
            "FleetId": "fleet-x", "Error": {"Code": fleet_error, "Message": "m"}}]})
    cloud.ec2("us-east-1").add_client_error("terminate_instances", "InvalidInstanceID.NotFound")
    assert cloud.provider.teardown(placement)["state"] == state
    cloud.verify()


def test_teardown_of_a_placement_that_launched_nothing_calls_nothing():
    cloud = Cloud(load("e2b-emb4-g6"))
    assert cloud.provider.teardown({"region": "us-east-1"})["state"] == "deleted"
    cloud.verify()


def test_teardown_without_a_placement_terminates_what_carries_the_runs_tags():
    """Provision died before answering: the workflow sends only region and run id."""
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.ec2("us-east-1").add_response("describe_instances", {"Reservations": [{"Instances": [
        {"InstanceId": "i-0aaa"}, {"InstanceId": "i-0bbb"}]}]}, {"Filters": [
            {"Name": "tag:benchstack:run-id", "Values": ["run-12"]},
            {"Name": "tag:benchstack:experiment", "Values": ["e2b-emb4-g6"]},
            {"Name": "instance-state-name",
             "Values": ["pending", "running", "stopping", "stopped"]}]})
    cloud.ec2("us-east-1").add_response("terminate_instances", {}, {"InstanceIds": ["i-0aaa"]})
    cloud.ec2("us-east-1").add_client_error("terminate_instances", "RequestLimitExceeded",
                                            expected_params={"InstanceIds": ["i-0bbb"]})
    for _ in range(5):  # throttling is retried with backoff before it counts as a problem
        cloud.ec2("us-east-1").add_client_error("terminate_instances", "RequestLimitExceeded",
                                                expected_params={"InstanceIds": ["i-0bbb"]})
    outcome = cloud.provider.teardown({"region": "us-east-1", "run_id": "run-12"})
    assert outcome["state"] == "retry-later" and "i-0bbb" in outcome["message"]
    assert outcome["instance_ids"] == ["i-0aaa", "i-0bbb"]
    cloud.verify()


def test_teardown_by_tag_with_nothing_left_is_deleted():
    cloud = Cloud(load("e2b-emb4-g6"))
    cloud.ec2("us-east-1").add_response("describe_instances", {"Reservations": []})
    outcome = cloud.provider.teardown({"region": "us-east-1", "run_id": "run-13"})
    assert outcome["state"] == "deleted" and outcome["instance_ids"] == []
    cloud.verify()


def test_the_runner_reads_the_parameter_the_foundation_publishes():
    from stacks import names

    assert ec2_fleet.SUBNETS_PARAMETER == names.foundation_parameter("public-subnet-ids")


@pytest.mark.parametrize("itype,market,quota", [
    ("g6.xlarge", "on-demand", "Running On-Demand G and VT instances"),
    ("g5g.2xlarge", "spot", "All G and VT Spot Instance Requests"),
    ("inf2.xlarge", "on-demand", "Running On-Demand Inf instances"),
    ("trn1.2xlarge", "spot", "All Trn Spot Instance Requests"),
])
def test_quota_names(itype, market, quota):
    assert ec2_fleet.quota_name(itype, market) == quota


def test_error_kinds():
    assert ec2_fleet.error_kind("Unsupported") == "capacity"
    assert ec2_fleet.error_kind("MaxSpotInstanceCountExceeded") == "quota"
    assert ec2_fleet.error_kind("InvalidParameterValue") == "fatal"
