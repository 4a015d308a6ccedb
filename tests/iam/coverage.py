"""What the IAM coverage test knows: which role runs which runners code, which IAM actions
an operation needs, and which resources (with which request context) it touches.

Extend here: a new AWS call in runners/ fails tests/iam/test_iam_coverage.py until its
operation has a RESOURCES rule (and, if its IAM action is not service:Operation, an
ACTIONS entry), and its call site a RUNS_IN entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from runners import tags
from runners.workflow import execution as workflow
from stacks import names
from tests.iam.policy import ACCOUNT

HOME = "us-east-1"  # the benchmark stack whose roles are evaluated (all regions are alike)


@dataclass(frozen=True)
class Role:
    name: str
    stack: Callable[[dict], str]  # the recorded call -> the stack holding the role
    prefix: str  # the role's logical id prefix


def home(call: dict) -> str:
    """Where the code runs: AWS_REGION in Lambda; a test that sets none runs where it
    calls, as a run's home region would."""
    return call.get("home") or call["region"]


def _benchmark(call: dict) -> str:
    """The benchmark stack of the region the function runs in, else HOME's."""
    region = home(call)
    return names.benchmark(region if region in BENCHMARK_REGIONS else HOME)


BENCHMARK_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
CONTROL = Role("control function", _benchmark, "ControlRole")
DATA = Role("in-VPC data function", _benchmark, "DataRole")
WATCHDOG = Role("watchdog", lambda call: names.watchdog(), "WatchdogSweepRole")
# The deploy trigger: the experiment stack (in the experiment's first region) of the
# experiment it starts (BENCHSTACK_EXPERIMENT, recorded with the call).
TRIGGER = Role("deploy trigger", lambda call: names.experiment(call["experiment"], home(call)),
               "RunOnDeployStarterRole")

# Call site (a runners frame "module.function", matched as a prefix, innermost frame
# first, first entry that matches wins) -> the roles that run it. None: not a deployed
# role (a laptop's or the CLI's own credentials).
RUNS_IN: list[tuple[str, tuple[Role, ...] | None]] = [
    ("runners.workflow.start.hand_off", (CONTROL,)),
    ("runners.workflow.start.trigger_handler", (TRIGGER,)),
    ("runners.workflow.start", None),  # `python -m runners start`
    ("runners.checks.doctor", None),  # `python -m runners doctor`, the user's credentials
    ("runners.cli", None),
    ("runners.watchdog", (WATCHDOG,)),
    ("runners.results.store", (CONTROL, DATA)),  # every phase writes its record
    ("runners.providers", (CONTROL,)),
    # CloudWatch Logs and metrics, the EC2 telemetry files: read at await_ready and after
    # teardown, both control-function steps (runners/workflow/execution.py NEEDS_AWS_APIS)
    ("runners.telemetry", (CONTROL,)),
    ("runners.workflow.telemetry_collect", (CONTROL,)),
    ("runners.backends", (CONTROL,)),  # SageMaker runtime and Bedrock requests
    ("runners.cost", (CONTROL,)),
    ("runners.workflow", (CONTROL,)),
]

# Operations whose IAM action is not <signing name>:<Operation>, or that need more than
# one (Service Authorization Reference, "Actions defined by ...").
ACTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("s3", "ListObjectsV2"): ("s3:ListBucket",),
    # CloudWatch's API signs as "monitoring"; its IAM prefix is cloudwatch
    ("cloudwatch", "GetMetricData"): ("cloudwatch:GetMetricData",),
    ("s3", "HeadObject"): ("s3:GetObject",),
    ("bedrock-runtime", "Converse"): ("bedrock:InvokeModel",),
    ("bedrock-runtime", "ConverseStream"): ("bedrock:InvokeModelWithResponseStream",),
    # CreateFleet launches through RunInstances and tags through CreateTags (EC2 User
    # Guide, "EC2 Fleet prerequisites": the caller needs both)
    ("ec2", "CreateFleet"): ("ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateTags"),
    # Tags on create need AddTags too (SageMaker Developer Guide, tagging on create)
    ("sagemaker", "CreateEndpoint"): ("sagemaker:CreateEndpoint", "sagemaker:AddTags"),
    ("cloudwatch", "PutMetricData"): ("cloudwatch:PutMetricData",),  # signs as monitoring
    ("stepfunctions", "StartExecution"): ("states:StartExecution",),
    ("stepfunctions", "DescribeExecution"): ("states:DescribeExecution",),
}


@dataclass(frozen=True)
class Check:
    action: str
    resource: str
    context: dict[str, Any]


def arn(service: str, region: str, resource: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:{service}:{region}:{account}:{resource}"


def _tagged(params: dict, kind: str) -> dict[str, str]:
    found = {}
    for spec in params.get("TagSpecifications", []):
        if spec["ResourceType"] == kind:
            found.update({f"aws:RequestTag/{t['Key']}": t["Value"] for t in spec["Tags"]})
    return found


def _create_fleet(p: dict, region: str) -> list[Check]:
    checks = []
    for kind in ("fleet", "instance", "volume"):
        request_tags = _tagged(p, kind)
        if kind == "volume":  # the launch template tags volumes (launch_template.py)
            request_tags = request_tags or {f"aws:RequestTag/{tags.MANAGED}": "true"}
        for action in ("ec2:CreateFleet", "ec2:RunInstances"):
            checks.append(Check(action, arn("ec2", region, f"{kind}/*"), request_tags))
        checks.append(Check("ec2:CreateTags", arn("ec2", region, f"{kind}/*"),
                            {"ec2:CreateAction": "CreateFleet"}))
    used = ["network-interface/*", "security-group/*"]
    for config in p.get("LaunchTemplateConfigs", []):
        used.append(f"launch-template/{config['LaunchTemplateSpecification']['LaunchTemplateId']}")
        used += [f"subnet/{o['SubnetId']}" for o in config.get("Overrides", []) if "SubnetId" in o]
    for resource in used:
        for action in ("ec2:CreateFleet", "ec2:RunInstances"):
            checks.append(Check(action, arn("ec2", region, resource), {}))
    checks.append(Check("ec2:RunInstances", arn("ec2", region, "image/ami-0", account=""), {}))
    return checks


_MANAGED = {f"aws:ResourceTag/{tags.MANAGED}": "true"}  # what benchstack deletes is tagged


def _bucket(key: str, world) -> str:
    """engines/... lives in the cache bucket (the EC2 telemetry the teardown reads); every
    other key in the results store."""
    return world.cache_bucket if key.startswith("engines/") else world.results_bucket


def _s3_object(p: dict, region: str, world) -> str:
    """Deployed, the store is s3://<results bucket> and every key starts at runs/; a test
    store may sit under a prefix of its own, which is dropped."""
    key = p["Key"]
    return (f"arn:aws:s3:::{_bucket(key, world)}/"
            f"{key[key.find('runs/'):] if 'runs/' in key else key}")


# (service, operation) -> the resources and request context one call touches, from its
# parameters. Names a test world invents (buckets, topics) become the deployed ones.
RESOURCES: dict[tuple[str, str], Callable[..., list[tuple[str, dict]]]] = {
    # the container log of a SageMaker endpoint (runners/telemetry/cloudwatch_logs.py)
    ("logs", "FilterLogEvents"): lambda p, r, w: [
        (arn("logs", r, f"log-group:{p['logGroupName']}"), {})],
    # GetMetricData takes no resource (Service Authorization Reference, CloudWatch)
    ("cloudwatch", "GetMetricData"): lambda p, r, w: [("*", {})],
    ("ssm", "GetParameter"): lambda p, r, w: [(arn("ssm", r, f"parameter{p['Name']}"), {})],
    ("ssm", "GetParameters"): lambda p, r, w: [(arn("ssm", r, f"parameter{n}"), {})
                                               for n in p["Names"]],
    ("secretsmanager", "GetSecretValue"): lambda p, r, w: [
        (arn("secretsmanager", r, f"secret:{p['SecretId']}-AbCdEf"), {})],
    ("sns", "Publish"): lambda p, r, w: [(w.alerts_topic(p["TopicArn"].split(":")[3]), {})],
    ("s3", "PutObject"): lambda p, r, w: [(_s3_object(p, r, w), {})],
    ("s3", "GetObject"): lambda p, r, w: [(_s3_object(p, r, w), {})],
    ("s3", "HeadObject"): lambda p, r, w: [(_s3_object(p, r, w), {})],
    ("s3", "ListObjectsV2"): lambda p, r, w: [(f"arn:aws:s3:::{_bucket(p.get('Prefix', ''), w)}", {
        "s3:prefix": p.get("Prefix", "")[p.get("Prefix", "").find("runs/"):]
        if "runs/" in p.get("Prefix", "") else p.get("Prefix", "")})],
    ("sagemaker", "CreateEndpoint"): lambda p, r, w: [
        (arn("sagemaker", r, f"endpoint/{p['EndpointName'].lower()}"), {}),
        (arn("sagemaker", r, f"endpoint-config/{p['EndpointConfigName'].lower()}"), {})],
    **{("sagemaker", op): (lambda p, r, w: [
        (arn("sagemaker", r, f"endpoint/{p['EndpointName'].lower()}"), _MANAGED)])
       for op in ("DescribeEndpoint", "DeleteEndpoint")},
    **{("sagemaker-runtime", op): (lambda p, r, w: [
        (arn("sagemaker", r, f"endpoint/{p['EndpointName'].lower()}"), {})])
       for op in ("InvokeEndpoint", "InvokeEndpointWithResponseStream")},
    ("sagemaker", "DeleteEndpointConfig"): lambda p, r, w: [
        (arn("sagemaker", r, f"endpoint-config/{p['EndpointConfigName'].lower()}"), _MANAGED)],
    ("sagemaker", "DeleteModel"): lambda p, r, w: [
        (arn("sagemaker", r, f"model/{p['ModelName'].lower()}"), _MANAGED)],
    ("sagemaker", "ListTags"): lambda p, r, w: [(p["ResourceArn"], {})],
    **{("sagemaker", op): (lambda p, r, w: [("*", {})])
       for op in ("ListEndpoints", "ListEndpointConfigs", "ListModels")},
    ("ec2", "CreateFleet"): lambda p, r, w: _create_fleet(p, r),
    ("ec2", "TerminateInstances"): lambda p, r, w: [
        (arn("ec2", r, f"instance/{i}"), _MANAGED) for i in p["InstanceIds"]],
    ("ec2", "DeleteFleets"): lambda p, r, w: [
        (arn("ec2", r, f"fleet/{i}"), _MANAGED) for i in p["FleetIds"]],
    **{("ec2", op): (lambda p, r, w: [("*", {})])
       for op in ("DescribeInstances", "DescribeFleets", "DescribeTags", "DescribeSubnets",
                  "DescribeInstanceTypeOfferings", "DescribeImages")},
    ("pricing", "GetProducts"): lambda p, r, w: [("*", {})],
    ("cloudwatch", "PutMetricData"): lambda p, r, w: [
        ("*", {"cloudwatch:namespace": p["Namespace"]})],
    ("stepfunctions", "StartExecution"): lambda p, r, w: [(p["stateMachineArn"], {})],
    ("stepfunctions", "DescribeExecution"): lambda p, r, w: [(p["executionArn"], {})],
    ("bedrock-runtime", "Converse"): lambda p, r, w: w.bedrock_model(p["modelId"], r),
    ("bedrock-runtime", "ConverseStream"): lambda p, r, w: w.bedrock_model(p["modelId"], r),
}


def bedrock_resources(model_id: str, region: str) -> list[tuple[str, dict]]:
    """An inference profile routes to the base model: both must be allowed."""
    geo, _, base = model_id.partition(".")
    if geo in ("us", "eu", "apac", "global") and base:
        return [(arn("bedrock", region, f"inference-profile/{model_id}"), {}),
                (arn("bedrock", region, f"foundation-model/{base}", account=""), {})]
    return [(arn("bedrock", region, f"foundation-model/{model_id}", account=""), {})]


def actions_of(call: dict) -> tuple[str, ...]:
    key = (call["service"], call["operation"])
    return ACTIONS.get(key, (f"{call['signing_name']}:{call['operation']}",))


def roles_of(frames: list[str]) -> tuple[Role, ...] | None | str:
    """The roles of the first RUNS_IN entry that any runners frame matches; "unknown" if
    none does."""
    sites = [frame.split(":", 1)[0] for frame in frames]
    for prefix, roles in RUNS_IN:
        if any(site == prefix or site.startswith(prefix + ".") for site in sites):
            return roles
    return "unknown"


STATE_MACHINE = workflow.STATE_MACHINE_NAME
