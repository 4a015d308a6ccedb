"""A Lambda function running code from runners/ (standard library + boto3, no bundling).

Shared by every runner: the watchdog, and the benchmark workflow's phase functions. Each
function gets its own role (no AWS managed policies) and its own log group with a
retention, and callers grant it exactly what it needs through `.role` / `.function`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from benchstack_constructs.nag import acknowledge

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = lambda_.Runtime.PYTHON_3_12

# The asset is the repository root reduced to runners/ (so `runners.x.handler` imports
# as it does locally), without tests, caches or virtualenvs.
ASSET_EXCLUDE = [
    "*",
    ".*",  # "*" skips dot-files and dot-folders (.git, .venv, .pytest_cache)
    "!runners",
    "!runners/**",
    "runners/**/.*",
    "runners/**/__pycache__",
    "runners/**/*.pyc",
    "runners/**/tests",
    "runners/**/test_*.py",
    "runners/**/.venv",
    "runners/**/node_modules",
]


def runners_code() -> lambda_.Code:
    return lambda_.Code.from_asset(str(ROOT), exclude=ASSET_EXCLUDE)


@dataclass(frozen=True)
class RunnerFunctionProps:
    handler: str  # "runners.<module>.<function>"
    timeout: Duration
    description: str
    memory_mb: int = 256
    environment: Mapping[str, str] = field(default_factory=dict)
    log_retention: logs.RetentionDays = logs.RetentionDays.THREE_MONTHS


class RunnerFunction(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: RunnerFunctionProps):
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self, "Logs",
            retention=props.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self, "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"benchstack runner: {props.description}"[:1000],
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self, "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,  # pure Python: the cheaper architecture
            code=runners_code(),
            handler=props.handler,
            timeout=props.timeout,
            memory_size=props.memory_mb,
            environment=dict(props.environment),
            description=props.description,
            role=self.role,
            log_group=self.log_group,
        )
        # CDK lists a given role in DependsOn and also reads it by GetAtt; cfn-lint warns
        # (W3005). Harmless, and CDK's doing.
        self.function.node.default_child.add_metadata(
            "cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        acknowledge(self.function, "AwsSolutions-L1",
                    "Python 3.12 is pinned: runners are tested on 3.12 (and 3.11 locally); "
                    "3.13+ is adopted deliberately, not by lint.")
