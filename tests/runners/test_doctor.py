"""`python -m runners doctor`: every check against botocore Stubber answers in the shapes
of the service models (STS, SSM, Service Quotas, EC2, ECR, Bedrock, CloudFormation,
Lambda), the Hub and Docker Hub faked at the HTTP layer. No credentials, no network."""

from __future__ import annotations

import botocore.session
import pytest
from botocore.stub import ANY, Stubber

from runners import cli, experiment
from runners.checks import doctor, preflight
from runners.checks.doctor import Check
from tests.conftest import EXPERIMENTS_DIR
from tests.runners.hub_fixtures import FakeHub, w4a16_model

ACCOUNT = "123456789012"


class StubbedSession:
    """A boto3-Session stand-in whose clients are botocore clients under Stubber."""

    region_name = "us-east-1"

    def __init__(self):
        self._session = botocore.session.get_session()
        self.clients, self.stubs = {}, {}

    def client(self, service, region_name=None):
        return self.stub(service, region_name).client

    def stub(self, service, region) -> Stubber:
        if (service, region) not in self.stubs:
            made = self._session.create_client(service, region_name=region,
                                               aws_access_key_id="x", aws_secret_access_key="x")
            self.stubs[(service, region)] = Stubber(made)
            self.stubs[(service, region)].activate()
        return self.stubs[(service, region)]

    def verify(self):
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()

    # ---------------------------------------------------------------- answers

    def identity(self, region):
        self.stub("sts", region).add_response("get_caller_identity", {
            "UserId": "AIDA", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/me"})

    def parameter(self, region, name, value=None):
        if value is None:
            self.stub("ssm", region).add_client_error("get_parameter", "ParameterNotFound",
                                                      expected_params={"Name": name})
        else:
            self.stub("ssm", region).add_response("get_parameter", {"Parameter": {
                "Name": name, "Type": "String", "Value": value}}, {"Name": name})

    def stacks(self, region, *, bootstrap="25", experiment_name=None):
        self.parameter(region, doctor.BOOTSTRAP_PARAMETER, bootstrap)
        self.parameter(region, "/benchstack/foundation/results-bucket", "bucket")
        self.parameter(region, "/benchstack/benchmark/state-machine-arn", "arn:sm")
        if experiment_name:
            self.parameter(region, f"/benchstack/experiments/{experiment_name}", "{}")

    def watchdog(self, regions: str):
        self.stub("cloudformation", "us-east-2").add_response("describe_stack_resources", {
            "StackResources": [{"LogicalResourceId": "SweepFunction", "PhysicalResourceId":
                                "benchstack-watchdog-fn", "ResourceType": "AWS::Lambda::Function",
                                "Timestamp": "2026-12-03T00:00:00Z",
                                "ResourceStatus": "CREATE_COMPLETE"}]},
            {"StackName": doctor.WATCHDOG_STACK})
        self.stub("lambda", "us-east-2").add_response("get_function_configuration", {
            "FunctionName": "benchstack-watchdog-fn",
            "Environment": {"Variables": {"WATCHDOG_REGIONS": regions}}},
            {"FunctionName": "benchstack-watchdog-fn"})


def load(name):
    return experiment.find(EXPERIMENTS_DIR, name)


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_a_ready_bedrock_account_is_all_ok():
    aws = StubbedSession()
    aws.identity("us-east-1")
    aws.stacks("us-east-1", experiment_name="nova-micro-bedrock")
    aws.stub("bedrock", "us-east-1").add_response("get_foundation_model_availability", {
        "modelId": "amazon.nova-micro-v1:0", "authorizationStatus": "AUTHORIZED",
        "agreementAvailability": {"status": "AVAILABLE"},
        "entitlementAvailability": "AVAILABLE", "regionAvailability": "AVAILABLE"},
        {"modelId": "amazon.nova-micro-v1:0"})
    aws.watchdog("us-east-1,us-east-2,us-west-2")
    checks = doctor.run_checks(load("nova-micro-bedrock"), "us-east-1", session=aws)
    aws.verify()
    assert [c.status for c in checks] == ["ok"] * len(checks), [c.line() for c in checks]
    assert [c.name for c in checks] == [
        "credentials", "cdk-bootstrap us-east-1", "foundation us-east-1", "benchmark us-east-1",
        "experiment-stack us-east-1", "bedrock-access us-east-1", "watchdog"]
    assert doctor.exit_code(checks) == 0
    assert checks[0].to_dict() == {"name": "credentials", "status": "ok", "message":
                                   f"account {ACCOUNT} as arn:aws:iam::{ACCOUNT}:user/me"}


def test_a_missing_permission_is_a_line_not_a_traceback():
    aws = StubbedSession()
    aws.identity("us-east-1")
    aws.stacks("us-east-1", experiment_name="nova-micro-bedrock")
    aws.stub("bedrock", "us-east-1").add_client_error(
        "get_foundation_model_availability", "AccessDeniedException", "not authorized")
    aws.stub("cloudformation", "us-east-2").add_client_error(
        "describe_stack_resources", "AccessDenied", "no")
    checks = by_name(doctor.run_checks(load("nova-micro-bedrock"), "us-east-1", session=aws))
    assert checks["bedrock-access us-east-1"] == Check(
        "bedrock-access us-east-1", "warn", "cannot check: AccessDeniedException on "
        "GetFoundationModelAvailability; allow it to the credentials doctor runs with, or "
        "check by hand")
    assert checks["watchdog"].status == "warn"


def docker_hub_and(hub: FakeHub, missing: bool = False):
    def fetch(url, headers, max_bytes):
        if url.startswith(doctor.DOCKER_HUB_AUTH):
            return b'{"token": "t"}'
        if url.startswith(doctor.DOCKER_HUB_REGISTRY):
            assert headers["Authorization"] == "Bearer t"
            if missing:
                raise preflight.FetchError(url, 404, "not found")
            return b"{}"
        return hub.fetch(url, headers, max_bytes)
    return fetch


def test_an_ec2_account_not_ready_says_what_to_do_on_each_line(monkeypatch):
    for key in preflight.TOKEN_ENV:
        monkeypatch.delenv(key, raising=False)
    exp = load("e2b-emb4-g6")  # g6.xlarge (4 vCPUs) then g6.2xlarge (8)
    aws = StubbedSession()
    aws.identity("us-east-1")
    aws.stacks("us-east-1", bootstrap=None, experiment_name=exp.name)
    aws.stub("service-quotas", "us-east-1").add_response("list_service_quotas", {"Quotas": [
        {"QuotaName": "Running On-Demand G and VT instances", "QuotaCode": "L-DB2E81BA",
         "Value": 8.0, "ServiceCode": "ec2"}]}, {"ServiceCode": "ec2"})
    aws.stub("ec2", "us-east-1").add_response("describe_instances", {"Reservations": [
        {"Instances": [{"InstanceId": "i-1", "InstanceType": "g6.xlarge",
                        "CpuOptions": {"CoreCount": 2, "ThreadsPerCore": 2}}]}]},
        {"Filters": ANY})
    aws.parameter("us-east-1", "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-"
                  "gpu-amazon-linux-2023/latest/ami-id", "ami-0abc")
    aws.watchdog("us-east-2,us-west-2")
    hub = FakeHub()
    hub.add(exp.model.id, w4a16_model(ignore=["re:.*vision_tower.*"]))
    checks = by_name(doctor.run_checks(exp, "us-east-1", session=aws,
                                       fetch=docker_hub_and(hub)))
    aws.verify()
    assert checks["cdk-bootstrap us-east-1"].message == (
        f"not bootstrapped: run npx cdk bootstrap aws://{ACCOUNT}/us-east-1")
    quota = checks["quota us-east-1 Running On-Demand G and VT instances"]
    assert quota.status == "warn" and quota.message.startswith(
        "4 of 8 vCPUs free for \"Running On-Demand G and VT instances\" (L-DB2E81BA)")
    assert checks["ami us-east-1 g6.xlarge/g6.2xlarge"].status == "ok"
    assert checks["engine-image"] == Check("engine-image", "ok",
                                           "vllm/vllm-openai:v0.30.0 exists on Docker Hub")
    assert checks["hub-model"].status == "ok"
    assert checks["watchdog"].message.startswith("sweeps us-east-2,us-west-2 from us-east-2, "
                                                 "not us-east-1: redeploy it with -c watchdog_")
    assert doctor.exit_code(list(checks.values())) == 1


def test_sagemaker_quota_counts_the_instances_live_endpoints_hold():
    aws = StubbedSession()
    aws.stub("service-quotas", "us-east-2").add_response("list_service_quotas", {"Quotas": [
        {"QuotaName": "ml.g6.xlarge for endpoint usage", "QuotaCode": "L-1", "Value": 1.0}]},
        {"ServiceCode": "sagemaker"})
    aws.stub("sagemaker", "us-east-2").add_response("list_endpoints", {"Endpoints": [
        {"EndpointName": "bs-x", "EndpointArn": "arn:aws:sagemaker:us-east-2:1:endpoint/bs-x",
         "CreationTime": "2026-12-03T00:00:00Z", "LastModifiedTime": "2026-12-03T00:00:00Z",
         "EndpointStatus": "InService"}]})
    aws.stub("sagemaker", "us-east-2").add_response("describe_endpoint", {
        "EndpointName": "bs-x", "EndpointArn": "arn:aws:sagemaker:us-east-2:1:endpoint/bs-x",
        "EndpointStatus": "InService", "CreationTime": "2026-12-03T00:00:00Z",
        "LastModifiedTime": "2026-12-03T00:00:00Z",
        "ProductionVariants": [{"VariantName": "AllTraffic", "InstancePools": [
            {"InstanceType": "ml.g6.xlarge", "CurrentInstanceCount": 1}]}]},
        {"EndpointName": "bs-x"})
    check = doctor.check_sagemaker_quota(doctor._Clients(aws), "us-east-2", "ml.g6.xlarge")
    assert check == Check("quota us-east-2 ml.g6.xlarge", "fail",
                          "0 of 1 free for \"ml.g6.xlarge for endpoint usage\" (L-1): request "
                          "an increase in Service Quotas (sagemaker) in us-east-2")


def test_a_missing_ecr_image_fails_before_anything_bills():
    aws = StubbedSession()
    aws.stub("ecr", "us-east-1").add_client_error(
        "describe_images", "ImageNotFoundException", expected_params={
            "registryId": "111122223333", "repositoryName": "vllm-sm75",
            "imageIds": [{"imageTag": "0.27.2rc0"}]})
    (check,) = doctor.check_engine_images(doctor._Clients(aws), load("e2b-fp16-g5g"),
                                          ["us-east-1"], fetch=None)
    assert check.status == "fail" and check.message.startswith(
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/vllm-sm75:0.27.2rc0 does not exist")


def test_a_gated_model_without_a_stored_token_fails(monkeypatch):
    for key in preflight.TOKEN_ENV:
        monkeypatch.delenv(key, raising=False)
    exp = load("e2b-bf16-ml-g6")
    hub = FakeHub()
    hub.add(exp.model.id, w4a16_model(ignore=[]))
    hub.gated[exp.model.id], hub.token = "manual", "secret"
    aws = StubbedSession()
    aws.stub("secretsmanager", "us-east-2").add_client_error(
        "describe_secret", "ResourceNotFoundException",
        expected_params={"SecretId": "benchstack/hf-token"})
    checks = by_name(doctor.check_hub_model(doctor._Clients(aws), exp, ["us-east-2"],
                                            hub.fetch, None))
    assert checks["hub-model"].status == "warn" and "gated (manual)" in checks["hub-model"].message
    assert checks["hub-token"].message.startswith("the model is gated: set model.gated = true")
    assert checks["hub-token us-east-2"].message == (
        "no token in Secrets Manager benchstack/hf-token in us-east-2: store it "
        "(docs/first-deploy.md)")


def test_the_stack_names_match_the_stacks():
    from stacks import names

    assert doctor.WATCHDOG_STACK == names.watchdog()
    assert doctor.FOUNDATION_STACK.format(region="us-east-2") == names.foundation("us-east-2")
    assert doctor.BENCHMARK_STACK.format(region="us-east-2") == names.benchmark("us-east-2")


def test_the_cli_prints_one_line_per_check_and_fails_when_one_fails(monkeypatch, capsys):
    seen = {}

    def fake(exp, region, **_):
        seen.update(experiment=exp.name, region=region)
        return [Check("credentials", "ok", "account 1"), Check("watchdog", "fail", "deploy it")]
    monkeypatch.setattr(doctor, "run_checks", fake)
    assert cli.main(["doctor", "nova-micro-bedrock", "--region", "us-east-1"]) == 1
    assert capsys.readouterr().out.splitlines() == ["ok    credentials: account 1",
                                                    "fail  watchdog: deploy it"]
    assert seen == {"experiment": "nova-micro-bedrock", "region": "us-east-1"}


def test_a_local_experiment_has_nothing_to_check():
    (check,) = doctor.run_checks(load("local-gemma3-270m"), None, session=StubbedSession())
    assert check.status == "skip"


@pytest.mark.parametrize("version,status", [("5", "fail"), ("6", "ok")])
def test_the_bootstrap_must_be_new_enough(version, status):
    aws = StubbedSession()
    aws.parameter("us-east-1", doctor.BOOTSTRAP_PARAMETER, version)
    assert doctor.check_bootstrap(doctor._Clients(aws), "us-east-1", ACCOUNT).status == status


def test_an_image_on_another_registry_is_left_to_the_user():
    import dataclasses

    exp = load("e2b-emb4-g6")
    exp = dataclasses.replace(exp, ec2=dataclasses.replace(
        exp.ec2, engine_image="public.ecr.aws/neuron/vllm:1.0"))
    (check,) = doctor.check_engine_images(None, exp, ["us-east-1"], fetch=None)
    assert check.status == "warn" and "check public.ecr.aws by hand" in check.message


def test_a_docker_hub_image_that_does_not_exist_fails():
    exp = load("e2b-emb4-g6")
    (check,) = doctor.check_engine_images(None, exp, ["us-east-1"],
                                          fetch=docker_hub_and(FakeHub(), missing=True))
    assert check == Check("engine-image", "fail", "vllm/vllm-openai:v0.30.0 not found on Docker "
                                                  "Hub (HTTP 404): fix ec2.engine_image")


def test_a_profile_that_does_not_exist_is_one_line(monkeypatch, capsys):
    """AWS_PROFILE naming no profile raises in botocore before any call: one fail line."""
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile-here")
    assert cli.main(["doctor", "e2b-emb4-g6", "--region", "us-east-2"]) == 1
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("fail  credentials: no usable AWS configuration") and \
        "no-such-profile-here" in line
