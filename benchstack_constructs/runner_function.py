"""A Lambda function that runs code from the runners/ package, deployed as it is.

Shared by every runner: the benchmark workflow's phase functions, the deploy trigger and
the watchdog. The runners use only the standard library and boto3; the asset is runners/
plus the pinned boto3/botocore, bundled locally without Docker (runner_bundle.py), so the
code in Lambda is byte for byte the code the local driver runs, on the SDK the tests ran
on rather than whatever the Lambda runtime ships. Each function gets its
own role (no AWS managed policies) and its own log group with a retention; callers grant
it exactly what it needs through `.role`.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import AssetHashType, BundlingOptions, Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from benchstack_constructs import cfn_lint, runner_bundle
from benchstack_constructs.nag import acknowledge

REPO_ROOT = Path(__file__).resolve().parent.parent
# Glob patterns over the repository root (so `runners.x.handler` imports as it does
# locally): keep runners/ only; "*" does not match dot-folders such as .git and .venv.
ASSET_EXCLUDE = [
    "*",
    ".*",
    "!runners",
    "!runners/**",
    "runners/**/.*",
    "runners/**/__pycache__",
    "runners/**/*.pyc",
    "runners/**/*.sh",  # the EC2 boot script is rendered at synth, never in Lambda
]
RUNTIME = lambda_.Runtime.PYTHON_3_12


def runners_code() -> lambda_.Code:
    """The asset: bundled by `runner_bundle.LOCAL` (the image is named because CDK's
    BundlingOptions require one; local bundling always succeeds, so it is never pulled).
    Hashed on the output, so an SDK upgrade is a new asset."""
    return lambda_.Code.from_asset(
        str(REPO_ROOT), exclude=ASSET_EXCLUDE, asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(image=RUNTIME.bundling_image, local=runner_bundle.LOCAL))


class RunnerFunction(Construct):
    """A runners/ handler with its own role, a log group with a retention, and optionally
    an ENI in a VPC's public subnets."""

    def __init__(self, scope: Construct, construct_id: str, *, handler: str, timeout: Duration,
                 description: str, function_name: str | None = None,
                 environment: dict[str, str] | None = None, memory_mb: int = 512,
                 vpc: ec2.IVpc | None = None, security_group: ec2.ISecurityGroup | None = None,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH):
        super().__init__(scope, construct_id)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                             description=f"benchstack runner: {description}"[:1000])
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention,
                                       removal_policy=RemovalPolicy.DESTROY)
        self.function = lambda_.Function(
            self, "Function",
            function_name=function_name,
            description=description,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            code=runners_code(),
            handler=handler,
            timeout=timeout,
            memory_size=memory_mb,
            role=self.role,
            log_group=self.log_group,
            environment=environment,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC) if vpc else None,
            # The function's ENI gets no public IP: it reaches only the VPC and S3 through
            # the gateway endpoint, which is all it is for (docs/workflow.md).
            allow_public_subnet=bool(vpc),
            security_groups=[security_group] if security_group else None,
        )
        self.log_group.grant_write(self.role)
        cfn_lint.ignore(self.function.node.default_child, cfn_lint.REDUNDANT_ROLE_DEPENDENCY)
        if vpc:
            # Lambda manages the function's ENIs with these; they take no resource scoping.
            self.role.add_to_principal_policy(iam.PolicyStatement(
                actions=["ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces",
                         "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses",
                         "ec2:UnassignPrivateIpAddresses"],
                resources=["*"],
            ))
        acknowledge(self.function, "AwsSolutions-L1",
                    "Python 3.12 is pinned on purpose: the runners run unchanged locally and "
                    "in Lambda, so a runtime upgrade is a tested change, not an automatic one.")
