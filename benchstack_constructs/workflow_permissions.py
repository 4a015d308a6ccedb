"""Least-privilege statements for the runner functions, scoped by name prefix or tag.

Regions are "*" where a run may fall back to another of the experiment's regions; names
and tags keep the scope to benchstack's own resources.
"""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

from runners import tags
from runners.providers.sagemaker import names as sagemaker_names
from runners.workflow import execution as workflow

EXPERIMENT_STACKS = "Benchstack-Exp-"


def arn(service: str, resource: str, *, region: str = "*", account: str = Aws.ACCOUNT_ID) -> str:
    return f"arn:{Aws.PARTITION}:{service}:{region}:{account}:{resource}"


def sagemaker_endpoints() -> list[iam.PolicyStatement]:
    """Create, watch, call and delete benchstack endpoints from the stacks' configs.

    Endpoint names are benchstack's own (runners/providers/sagemaker/names.py); the configs keep
    CloudFormation's generated names, because an endpoint config is replaced on every
    change and a fixed name would block the replacement."""
    endpoint = arn("sagemaker", f"endpoint/{sagemaker_names.ENDPOINT_PREFIX}-*")
    return [
        iam.PolicyStatement(
            actions=["sagemaker:CreateEndpoint", "sagemaker:AddTags"],
            resources=[endpoint, arn("sagemaker", "endpoint-config/*")],
        ),
        iam.PolicyStatement(
            actions=["sagemaker:DescribeEndpoint", "sagemaker:DeleteEndpoint",
                     "sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            resources=[endpoint],
        ),
    ]


def ec2_fleets() -> list[iam.PolicyStatement]:
    """Launch only what is tagged benchstack:managed at creation; terminate only that.

    The tag condition covers exactly what the CreateFleet TagSpecifications (fleet,
    instance, volume) and the launch template (instance, volume) tag. The instance's
    network interface is created by the launch too but carries no tag, so it sits with
    the unconditioned resources, as in the EC2 User Guide's tag-on-create example
    ("Launch instances with specific tags"): a RequestTag condition on it denies every
    launch."""
    managed = {f"aws:RequestTag/{tags.MANAGED}": "true"}
    created = ["instance/*", "volume/*", "fleet/*"]
    return [
        iam.PolicyStatement(
            actions=["ec2:CreateFleet", "ec2:RunInstances"],
            resources=[arn("ec2", r) for r in created],
            conditions={"StringEquals": managed},
        ),
        # What a launch uses, or creates untagged (the ENI), carries no request tags.
        iam.PolicyStatement(
            actions=["ec2:CreateFleet", "ec2:RunInstances"],
            resources=[arn("ec2", r) for r in ("subnet/*", "security-group/*",
                                                "launch-template/*", "network-interface/*")]
            + [arn("ec2", "image/*", account="")],
        ),
        iam.PolicyStatement(
            actions=["ec2:CreateTags"],
            resources=[arn("ec2", r) for r in created],
            conditions={"StringEquals": {"ec2:CreateAction": ["CreateFleet", "RunInstances"]}},
        ),
        iam.PolicyStatement(
            actions=["ec2:TerminateInstances", "ec2:DeleteFleets"],
            resources=[arn("ec2", "instance/*"), arn("ec2", "fleet/*")],
            conditions={"StringEquals": {f"aws:ResourceTag/{tags.MANAGED}": "true"}},
        ),
        # EC2's Describe calls support no resource scoping.
        iam.PolicyStatement(
            actions=["ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeFleets",
                     "ec2:DescribeFleetInstances", "ec2:DescribeLaunchTemplateVersions",
                     "ec2:DescribeSubnets", "ec2:DescribeImages",
                     "ec2:DescribeInstanceTypeOfferings"],
            resources=["*"],
        ),
        # The engines' instance role, made by the experiment stacks (CloudFormation names it
        # after the stack: Benchstack-Exp-...), passed only to EC2.
        iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:role/{EXPERIMENT_STACKS}*"],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
    ]


def bedrock_models(model_ids: list[str]) -> list[iam.PolicyStatement]:
    """Invoke/Converse on the experiments' models only. A cross-region inference profile
    ("us.amazon.nova-micro-v1:0") routes to the base model in several regions."""
    if not model_ids:
        return []
    resources = []
    for model_id in sorted(set(model_ids)):
        geo, _, base = model_id.partition(".")
        if geo in ("us", "eu", "apac", "global") and base:
            resources.append(arn("bedrock", f"inference-profile/{model_id}"))
            model_id = base
        resources.append(arn("bedrock", f"foundation-model/{model_id}", account=""))
    return [iam.PolicyStatement(
        actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
        resources=resources,
    )]


def results_store(bucket_name: str) -> list[iam.PolicyStatement]:
    """Write and read run results under runs/; never delete, never anything else."""
    bucket = f"arn:{Aws.PARTITION}:s3:::{bucket_name}"
    return [
        iam.PolicyStatement(actions=["s3:PutObject", "s3:GetObject"],
                            resources=[f"{bucket}/runs/*"]),
        # ListBucket lets a missing key read as 404, which "never overwrite" relies on.
        iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket],
                            conditions={"StringLike": {"s3:prefix": ["runs/*"]}}),
    ]


def run_telemetry(cache_bucket_name: str) -> list[iam.PolicyStatement]:
    """What a run reads about itself after teardown (runners/telemetry): a SageMaker
    endpoint's container log and CloudWatch metrics, and the files an EC2 engine instance
    ships to its experiment's cache prefix (engines/<experiment>/telemetry/<run id>/)."""
    group = f"log-group:{sagemaker_names.LOG_GROUP_ROOT}/{sagemaker_names.ENDPOINT_PREFIX}-*"
    bucket = f"arn:{Aws.PARTITION}:s3:::{cache_bucket_name}"
    return [
        # the wildcard also covers the "<group>:*" form some log-group actions check
        iam.PolicyStatement(actions=["logs:FilterLogEvents"], resources=[arn("logs", group)]),
        # GetMetricData supports no resource-level permissions.
        iam.PolicyStatement(actions=["cloudwatch:GetMetricData"], resources=["*"]),
        iam.PolicyStatement(actions=["s3:GetObject"],
                            resources=[f"{bucket}/engines/*/telemetry/*"]),
        iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket],
                            conditions={"StringLike": {"s3:prefix": ["engines/*/telemetry/*"]}}),
    ]


def parameters_and_prices() -> list[iam.PolicyStatement]:
    return [
        # A gated model's Hugging Face token, for the SageMaker preflight's Hub reads
        # (Secrets Manager adds six random characters to a secret's ARN).
        iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"],
                            resources=[arn("secretsmanager",
                                           f"secret:{sagemaker_names.HF_TOKEN_SECRET}-??????")]),
        # GetParameters: the SageMaker provider reads the stack's two names in one call.
        iam.PolicyStatement(actions=["ssm:GetParameter", "ssm:GetParameters"],
                            resources=[arn("ssm", f"parameter{workflow.SSM_ROOT}/*")]),
        # The Pricing API supports no resource scoping.
        iam.PolicyStatement(actions=["pricing:GetProducts"], resources=["*"]),
    ]


def start_runs(region: str = "*") -> list[iam.PolicyStatement]:
    """Start (and look at) executions of the benchmark state machine in `region`; "*" for
    the hand-off of a run to another of the experiment's regions."""
    machine = workflow.STATE_MACHINE_NAME
    return [
        iam.PolicyStatement(actions=["states:StartExecution"],
                            resources=[arn("states", f"stateMachine:{machine}", region=region)]),
        iam.PolicyStatement(actions=["states:DescribeExecution"],
                            resources=[arn("states", f"execution:{machine}:*", region=region)]),
    ]
