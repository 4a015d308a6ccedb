"""Telling cfn-lint about a warning that is CDK's doing, on one resource only."""

from __future__ import annotations

from aws_cdk import CfnResource
from constructs import IConstruct

# CDK makes a Lambda function or state machine depend on its role and the role's policy,
# and also reads the role's ARN by GetAtt; cfn-lint calls the DependsOn on the role
# redundant (W3005). The dependency on the policy is the one that matters, so it stays.
REDUNDANT_ROLE_DEPENDENCY = "W3005"


def ignore(resource: IConstruct | None, *checks: str) -> None:
    """Make cfn-lint skip `checks` on one CloudFormation resource (if it is one)."""
    if isinstance(resource, CfnResource):
        resource.add_metadata("cfn-lint", {"config": {"ignore_checks": list(checks)}})
