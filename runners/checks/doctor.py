"""`python -m runners doctor [EXPERIMENT] [--region R]`: is this account ready to run it?

One line per check, ok or what to do, in seconds and before anything bills:

credentials         who the calls run as (STS GetCallerIdentity)
cdk-bootstrap       the CDK bootstrap's version parameter in each region (SSM)
foundation, benchmark, experiment-stack
                    the parameters each stack publishes (SSM): deployed or not
quota               Service Quotas for every instance type the experiment may place, with
                    the number free: SageMaker "<type> for endpoint usage" (instances) less
                    what live endpoints hold; EC2 "Running On-Demand G and VT / Inf / Trn
                    instances" (vCPUs) less what running instances of the family use
engine-image        the SageMaker DLC image or the experiment's ECR image (ECR
                    DescribeImages), a Docker Hub image (the registry's manifest)
ami                 the public AMI parameter of each instance type resolves (SSM)
hub-model           the model answers on the Hugging Face Hub; gated models need a token
bedrock-access      the account may invoke the model (GetFoundationModelAvailability)
watchdog            the watchdog sweeps every region of the experiment

`run_checks` is the API (the CLI and other tools call it); a check that lacks the
permission to look says so as a "warn" line, never a traceback.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from runners import hardware
from runners.checks import preflight
from runners.experiment import Experiment
from runners.providers.ec2 import ami as ec2_ami
from runners.providers.ec2 import fleet as ec2_fleet
from runners.providers.ec2.user_data import HF_TOKEN_PARAMETER, ecr_image
from runners.providers.sagemaker import names as sagemaker_names
from runners.watchdog.sweep import DEFAULT_REGIONS as WATCHDOG_DEFAULT_REGIONS
from runners.workflow import execution as workflow

OK, FAIL, WARN, SKIP = "ok", "fail", "warn", "skip"
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"  # CDK's default qualifier
MIN_BOOTSTRAP_VERSION = 6  # the synthesized templates' CheckBootstrapVersion rule
# stacks/names.py's names (runners do not import stacks/); a test keeps them equal
WATCHDOG_STACK = "Benchstack-Watchdog"
FOUNDATION_STACK = "Benchstack-Foundation-{region}"
BENCHMARK_STACK = "Benchstack-Benchmark-{region}"
WATCHDOG_HOME = "us-east-2"  # stacks/watchdog.py WatchdogSettings.home_region
_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
           "UnrecognizedClientException", "AuthorizationError")
_LIVE_ENDPOINT = ("InService", "Creating", "Updating", "SystemUpdating", "RollingBack")
DOCKER_HUB_AUTH = "https://auth.docker.io/token"
DOCKER_HUB_REGISTRY = "https://registry-1.docker.io"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's answer."""

    name: str
    status: str  # ok | fail | warn | skip
    message: str  # the one line, including what to do

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.status:<4}  {self.name}: {self.message}"


class _Clients:
    def __init__(self, session):
        self.session, self._made = session, {}

    def __call__(self, service: str, region: str):
        if (service, region) not in self._made:
            self._made[(service, region)] = self.session.client(service, region_name=region)
        return self._made[(service, region)]


def _guarded(name: str, look: Callable[[], Check | list[Check]]) -> list[Check]:
    """Run one look; AWS's refusals become lines, not tracebacks."""
    try:
        found = look()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, operation = error.get("Code", "Unknown"), exc.operation_name
        if code in _DENIED:
            return [Check(name, WARN, f"cannot check: {code} on {operation}; allow it to the "
                                      "credentials doctor runs with, or check by hand")]
        return [Check(name, FAIL, f"{operation}: {code}: {error.get('Message', '')}".strip())]
    except NoCredentialsError:
        return [Check(name, SKIP, "no AWS credentials")]
    except BotoCoreError as exc:
        return [Check(name, WARN, f"cannot check: {exc}")]
    return found if isinstance(found, list) else [found]


def _code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


# ---------------------------------------------------------------- account and stacks


def _parameter(clients, region: str, name: str) -> str | None:
    try:
        return clients("ssm", region).get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as exc:
        if _code(exc) == "ParameterNotFound":
            return None
        raise


def check_bootstrap(clients, region: str, account: str) -> Check:
    name = f"cdk-bootstrap {region}"
    value = _parameter(clients, region, BOOTSTRAP_PARAMETER)
    bootstrap = f"npx cdk bootstrap aws://{account}/{region}"
    if value is None:
        return Check(name, FAIL, f"not bootstrapped: run {bootstrap}")
    if not value.isdigit() or int(value) < MIN_BOOTSTRAP_VERSION:
        return Check(name, FAIL, f"bootstrap version {value} is older than "
                                 f"{MIN_BOOTSTRAP_VERSION}: run {bootstrap}")
    return Check(name, OK, f"bootstrap version {value}")


def check_stack(clients, region: str, what: str, parameter: str, deploy: str) -> Check:
    name = f"{what} {region}"
    if _parameter(clients, region, parameter) is None:
        return Check(name, FAIL, f"not deployed ({parameter} missing): {deploy}")
    return Check(name, OK, f"deployed ({parameter})")


# ---------------------------------------------------------------- quotas


def _quota(clients, region: str, service: str, quota_name: str) -> dict | None:
    pages = clients("service-quotas", region).get_paginator("list_service_quotas").paginate(
        ServiceCode=service)
    for page in pages:
        for quota in page["Quotas"]:
            if quota["QuotaName"] == quota_name:
                return quota
    return None


def _sagemaker_in_use(clients, region: str, instance_type: str) -> int:
    sm, used = clients("sagemaker", region), 0
    for page in sm.get_paginator("list_endpoints").paginate():
        for summary in page["Endpoints"]:
            if summary["EndpointStatus"] not in _LIVE_ENDPOINT:
                continue
            described = sm.describe_endpoint(EndpointName=summary["EndpointName"])
            used += sum(pool.get("CurrentInstanceCount", 0)
                        for variant in described.get("ProductionVariants") or []
                        for pool in variant.get("InstancePools") or []
                        if pool.get("InstanceType") == instance_type)
    return used


def check_sagemaker_quota(clients, region: str, instance_type: str) -> Check:
    """SageMaker endpoint usage quotas count instances; one endpoint needs one."""
    quota_name = f"{instance_type} for endpoint usage"
    name = f"quota {region} {instance_type}"
    quota = _quota(clients, region, "sagemaker", quota_name)
    if quota is None:
        return Check(name, FAIL, f"no Service Quotas entry \"{quota_name}\" in {region}: the "
                                 "type is not offered there for endpoints")
    limit = int(quota["Value"])
    free = limit - _sagemaker_in_use(clients, region, instance_type)
    where = f"\"{quota_name}\" ({quota['QuotaCode']})"
    if free < 1:
        return Check(name, FAIL, f"{free} of {limit} free for {where}: request an increase in "
                                 f"Service Quotas (sagemaker) in {region}")
    return Check(name, OK, f"{free} of {limit} free for {where}")


def _family_group(instance_type: str) -> str:
    return ec2_fleet.quota_name(instance_type, "on-demand")


def _ec2_vcpus_in_use(clients, region: str, quota_name: str, market: str) -> int:
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    used = 0
    pages = clients("ec2", region).get_paginator("describe_instances").paginate(Filters=filters)
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                spot = instance.get("InstanceLifecycle") == "spot"
                if spot != (market == "spot"):
                    continue
                if ec2_fleet.quota_name(instance["InstanceType"], market) != quota_name:
                    continue
                cpu = instance.get("CpuOptions", {})
                used += cpu.get("CoreCount", 0) * cpu.get("ThreadsPerCore", 1)
    return used


def check_ec2_quota(clients, region: str, instance_types: list[str], market: str) -> Check:
    """EC2's running-instance quotas count vCPUs per family group (G and VT, Inf, Trn)."""
    quota_name = ec2_fleet.quota_name(instance_types[0], market)
    name = f"quota {region} {quota_name}"
    quota = _quota(clients, region, "ec2", quota_name)
    if quota is None:
        return Check(name, FAIL, f"no Service Quotas entry \"{quota_name}\" in {region}")
    limit = int(quota["Value"])
    free = limit - _ec2_vcpus_in_use(clients, region, quota_name, market)
    smallest = min(instance_types, key=lambda t: hardware.lookup(t).vcpus)
    sizes = sorted(hardware.lookup(t).vcpus for t in instance_types)
    where = f"\"{quota_name}\" ({quota['QuotaCode']})"
    if free < sizes[0]:
        return Check(name, FAIL, f"{free} of {limit} vCPUs free for {where}, {sizes[0]} needed "
                                 f"for {smallest}: request an increase in Service Quotas (ec2) "
                                 f"in {region}")
    if free < sizes[-1]:
        return Check(name, WARN, f"{free} of {limit} vCPUs free for {where}: the larger types "
                                 f"(up to {sizes[-1]} vCPUs) will be refused")
    return Check(name, OK, f"{free} of {limit} vCPUs free for {where}")


# ---------------------------------------------------------------- images and AMIs


def _ecr_image_exists(clients, name: str, registry: str, region: str, repository: str,
                      reference: str) -> Check:
    image_id = ({"imageDigest": reference} if reference.startswith("sha256:")
                else {"imageTag": reference})
    uri = f"{registry}.dkr.ecr.{region}.amazonaws.com/{repository}"
    try:
        clients("ecr", region).describe_images(registryId=registry, repositoryName=repository,
                                               imageIds=[image_id])
    except ClientError as exc:
        if _code(exc) in ("ImageNotFoundException", "RepositoryNotFoundException"):
            return Check(name, FAIL, f"{uri}:{reference} does not exist ({_code(exc)}): push it "
                                     "or fix the image in the experiment")
        raise
    return Check(name, OK, f"{uri}:{reference} exists")


def _split_reference(image: str) -> tuple[str, str]:
    if "@" in image:
        path, digest = image.split("@", 1)
        return path, digest
    path, _, tag = image.rpartition(":")
    return path, tag


def _docker_hub_image(name: str, image: str, fetch: preflight.Fetch) -> Check:
    """The registry's manifest for the tag (Docker Registry HTTP API v2, anonymous token)."""
    path, reference = _split_reference(image)
    path = path.removeprefix("docker.io/")
    try:
        token = json.loads(fetch(f"{DOCKER_HUB_AUTH}?service=registry.docker.io&scope="
                                 f"repository:{path}:pull", {}, 1_000_000))["token"]
        fetch(f"{DOCKER_HUB_REGISTRY}/v2/{path}/manifests/{reference}", {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.oci.image.index.v1+json, "
                      "application/vnd.docker.distribution.manifest.list.v2+json, "
                      "application/vnd.docker.distribution.manifest.v2+json"}, 1_000_000)
    except preflight.FetchError as exc:
        if exc.status in (401, 404):
            return Check(name, FAIL, f"{image} not found on Docker Hub (HTTP {exc.status}): fix "
                                     "ec2.engine_image")
        return Check(name, WARN, f"cannot check {image} on Docker Hub: {exc}")
    except (ValueError, KeyError):
        return Check(name, WARN, f"cannot check {image}: Docker Hub's token answer was unreadable")
    return Check(name, OK, f"{image} exists on Docker Hub")


def check_engine_images(clients, experiment: Experiment, regions: list[str],
                        fetch: preflight.Fetch) -> list[Check]:
    if experiment.sagemaker is not None:
        checks = []
        for region in regions:
            name = f"engine-image {region}"
            if region not in sagemaker_names.DLC_REGISTRY_ACCOUNTS:
                checks.append(Check(name, FAIL, f"no SageMaker vLLM DLC registry known for "
                                                f"{region}"))
                continue
            checks += _guarded(name, lambda region=region, name=name: _ecr_image_exists(
                clients, name, sagemaker_names.DLC_REGISTRY_ACCOUNTS[region], region,
                sagemaker_names.DLC_REPOSITORY, experiment.sagemaker.image_tag))
        return checks
    image = experiment.ec2.engine_image
    ecr = ecr_image(image)
    host = image.split("/", 1)[0]
    if ecr is None and ("." in host or ":" in host) and host != "docker.io":
        return [Check("engine-image", WARN, f"{image}: doctor checks ECR and Docker Hub images "
                                            f"only; check {host} by hand")]
    if ecr is None:
        return [_docker_hub_image("engine-image", image, fetch)]
    _, reference = _split_reference(image)
    return _guarded("engine-image", lambda: _ecr_image_exists(
        clients, "engine-image", ecr.account, ecr.region, ecr.repository, reference))


def check_ami(clients, region: str, parameter: str, instance_types: Iterable[str]) -> Check:
    name = f"ami {region} {'/'.join(instance_types)}"
    value = _parameter(clients, region, parameter)
    if value is None:
        return Check(name, FAIL, f"{parameter} does not resolve in {region}: the AMI is not "
                                 "published there; drop the region or the type")
    return Check(name, OK, f"{parameter} -> {value}")


# ---------------------------------------------------------------- model access


def _stored_token(clients, experiment: Experiment, region: str) -> tuple[bool, str]:
    if experiment.sagemaker is not None:
        where = f"Secrets Manager {sagemaker_names.HF_TOKEN_SECRET} in {region}"
        try:
            clients("secretsmanager", region).describe_secret(
                SecretId=sagemaker_names.HF_TOKEN_SECRET)
        except ClientError as exc:
            if _code(exc) == "ResourceNotFoundException":
                return False, where
            raise
        return True, where
    where = f"SSM {HF_TOKEN_PARAMETER} in {region}"
    return _parameter(clients, region, HF_TOKEN_PARAMETER) is not None, where


def check_hub_model(clients, experiment: Experiment, regions: list[str],
                    fetch: preflight.Fetch, hub_url: str | None) -> list[Check]:
    hub = preflight.HubModel(experiment.model.id, base_url=hub_url, fetch=fetch,
                             token=preflight.env_token())
    try:
        hub.fetch(hub.url("config.json"), dict(hub.auth), 1)
    except preflight.FetchError as exc:
        if exc.status is None:
            return [Check("hub-model", WARN, f"cannot reach the Hub: {exc}")]
        if exc.status not in (401, 403):
            return [Check("hub-model", FAIL, f"{experiment.model.id}: config.json not readable "
                                             f"({exc}): check model.id")]
    gated = hub.gated()
    if not gated:
        return [Check("hub-model", OK, f"{experiment.model.id} is on the Hub, not gated")]
    checks = [Check("hub-model", OK if hub.auth else WARN,
                    f"{experiment.model.id} is gated ({gated}); HF_TOKEN "
                    + ("is set" if hub.auth else "is not set here: the preflight reads the "
                       "backend's stored token"))]
    if not experiment.model.gated:
        checks.append(Check("hub-token", FAIL, "the model is gated: set model.gated = true so "
                                               "the backend is given the token"))
    for region in regions:
        name = f"hub-token {region}"

        def look(region=region, name=name) -> Check:
            found, where = _stored_token(clients, experiment, region)
            return (Check(name, OK, f"token stored ({where})") if found else
                    Check(name, FAIL, f"no token in {where}: store it (docs/first-deploy.md)"))
        checks += _guarded(name, look)
    return checks


def check_bedrock(clients, model_id: str, region: str) -> Check:
    """Inference profiles (us.amazon...) route to the base model, whose access counts.
    GetFoundationModelAvailability (bedrock 2023-04-20): authorizationStatus,
    entitlementAvailability and regionAvailability are strings, agreementAvailability a
    {status} structure."""
    geo, _, base = model_id.partition(".")
    base_id = base if geo in ("us", "eu", "apac", "global") and base else model_id
    name = f"bedrock-access {region}"
    answer = clients("bedrock", region).get_foundation_model_availability(modelId=base_id)
    states = {"agreement": (answer.get("agreementAvailability") or {}).get("status"),
              "entitlement": answer.get("entitlementAvailability"),
              "region": answer.get("regionAvailability")}
    authorized = answer.get("authorizationStatus")
    blocked = {k: v for k, v in states.items() if v != "AVAILABLE"}
    if authorized != "AUTHORIZED" or blocked:
        detail = ", ".join([f"authorization {authorized}"] + [f"{k} {v}" for k, v in
                                                              blocked.items()])
        return Check(name, FAIL, f"{base_id}: {detail}: enable the model in the Bedrock console "
                                 f"(Model access) in {region}")
    return Check(name, OK, f"{base_id} is available to this account")


# ---------------------------------------------------------------- watchdog


def check_watchdog(clients, regions: list[str]) -> Check:
    for home in dict.fromkeys([WATCHDOG_HOME, *regions]):
        try:
            resources = clients("cloudformation", home).describe_stack_resources(
                StackName=WATCHDOG_STACK)["StackResources"]
        except ClientError as exc:
            if _code(exc) == "ValidationError":  # "Stack with id ... does not exist"
                continue
            raise
        function = next((r["PhysicalResourceId"] for r in resources
                         if r["ResourceType"] == "AWS::Lambda::Function"), None)
        if function is None:
            continue
        config = clients("lambda", home).get_function_configuration(FunctionName=function)
        raw = config.get("Environment", {}).get("Variables", {}).get("WATCHDOG_REGIONS", "")
        swept = [r for r in raw.split(",") if r] or list(WATCHDOG_DEFAULT_REGIONS)
        missing = [r for r in regions if r not in swept]
        if missing:
            return Check("watchdog", FAIL, f"sweeps {','.join(swept)} from {home}, not "
                                           f"{', '.join(missing)}: redeploy it with -c "
                                           f"watchdog_regions={','.join([*swept, *missing])}")
        return Check("watchdog", OK, f"sweeps {','.join(swept)} from {home}")
    return Check("watchdog", FAIL, f"{WATCHDOG_STACK} is not deployed (looked in "
                                   f"{', '.join(dict.fromkeys([WATCHDOG_HOME, *regions]))}): "
                                   "deploy it before any run")


# ---------------------------------------------------------------- entry point


def _regions(experiment: Experiment | None, region: str | None, session) -> list[str]:
    if region:
        return [region]
    if experiment is not None and experiment.regions:
        return list(experiment.regions)
    return [session.region_name or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"]


def _experiment_checks(clients, experiment: Experiment, regions: list[str],
                       fetch: preflight.Fetch, hub_url: str | None) -> list[Check]:
    checks: list[Check] = []
    deploy = f"npx cdk deploy -c experiment={experiment.name} --all"
    for region in regions:
        checks += _guarded(f"experiment-stack {region}", lambda region=region: check_stack(
            clients, region, "experiment-stack", workflow.experiment_parameter(experiment.name),
            deploy))
    if experiment.sagemaker is not None:
        for region in regions:
            for itype in experiment.instance_types:
                checks += _guarded(f"quota {region} {itype}", lambda region=region, itype=itype:
                                   check_sagemaker_quota(clients, region, itype))
    if experiment.ec2 is not None:
        groups: dict[str, list[str]] = {}
        for itype in experiment.ec2.instance_types:
            groups.setdefault(_family_group(itype), []).append(itype)
        by_ami: dict[str, list[str]] = {}
        for itype in experiment.ec2.instance_types:
            by_ami.setdefault(ec2_ami.ami_parameter(itype), []).append(itype)
        for region in regions:
            for types in groups.values():
                offered = [t for t in types if region not in hardware.lookup(t).not_offered_in]
                if offered:
                    checks += _guarded(f"quota {region}", lambda region=region, offered=offered:
                                       check_ec2_quota(clients, region, offered,
                                                       experiment.ec2.market))
            for parameter, types in by_ami.items():
                checks += _guarded(f"ami {region}", lambda region=region, p=parameter, t=types:
                                   check_ami(clients, region, p, t))
    if experiment.sagemaker is not None or experiment.ec2 is not None:
        checks += check_engine_images(clients, experiment, regions, fetch)
        checks += check_hub_model(clients, experiment, regions, fetch, hub_url)
    if experiment.bedrock is not None:
        for region in regions:
            checks += _guarded(f"bedrock-access {region}", lambda region=region: check_bedrock(
                clients, experiment.bedrock.model_id, region))
    checks += _guarded("watchdog", lambda: check_watchdog(clients, regions))
    return checks


def run_checks(experiment: Experiment | None, region: str | None, *, session=None,
               fetch: preflight.Fetch = preflight.http_fetch,
               hub_url: str | None = None) -> list[Check]:
    """Every check for `experiment` (None: the account and the region's shared stacks) in
    `region` (None: the experiment's regions). `session` is a boto3 Session (default: the
    environment's credentials); `fetch` and `hub_url` serve the Hub and Docker Hub reads."""
    if experiment is not None and experiment.backend not in ("sagemaker", "ec2", "bedrock"):
        return [Check("experiment", SKIP, f"{experiment.name} runs on the {experiment.backend} "
                                          "backend: nothing on AWS to check")]
    try:
        if session is None:
            import boto3  # the CLI has it; tests pass a session of stubbed clients

            session = boto3.Session()
        regions = _regions(experiment, region, session)
    except BotoCoreError as exc:  # a profile that does not exist, a broken config file
        return [Check("credentials", FAIL, f"no usable AWS configuration ({exc}): set "
                                           "AWS_PROFILE to a profile that exists or run "
                                           "`aws configure`")]
    clients = _Clients(session)
    try:
        identity = clients("sts", regions[0]).get_caller_identity()
    except (NoCredentialsError, ClientError, BotoCoreError) as exc:
        return [Check("credentials", FAIL, f"no usable AWS credentials ({exc}): set "
                                           "AWS_PROFILE or run `aws configure`")]
    account = identity["Account"]
    checks = [Check("credentials", OK, f"account {account} as {identity['Arn']}")]
    for r in regions:
        checks += _guarded(f"cdk-bootstrap {r}", lambda r=r: check_bootstrap(clients, r, account))
        checks += _guarded(f"foundation {r}", lambda r=r: check_stack(
            clients, r, "foundation", workflow.foundation_parameter("results-bucket"),
            "npx cdk deploy " + FOUNDATION_STACK.format(region=r)))
        checks += _guarded(f"benchmark {r}", lambda r=r: check_stack(
            clients, r, "benchmark", workflow.STATE_MACHINE_PARAMETER,
            "npx cdk deploy " + BENCHMARK_STACK.format(region=r)))
    if experiment is not None:
        checks += _experiment_checks(clients, experiment, regions, fetch, hub_url)
    return checks


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0
