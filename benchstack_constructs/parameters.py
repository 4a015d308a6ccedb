"""SSM parameters: how stacks publish names for runners and later stacks, and read what an
earlier stack published (at deploy time, so no cross-stack export pins the producer)."""

from __future__ import annotations

from aws_cdk import CfnOutput, Token
from aws_cdk import aws_ssm as ssm
from constructs import Construct

# Standard-tier parameters hold 4 KiB; an experiment snapshot past that needs Advanced.
STANDARD_PARAMETER_LIMIT = 4096


def construct_id(key: str) -> str:
    """'results-bucket' -> 'ResultsBucket': stable construct ids from parameter keys."""
    return "".join(part.title() for part in key.split("-"))


def publish(scope: Construct, construct_id_: str, *, name: str, value: str,
            description: str) -> ssm.StringParameter:
    """One String parameter; a literal value gets the tier its size needs (a token's size
    is unknown at synth, and SSM's default tier is Standard)."""
    tier = None
    if not Token.is_unresolved(value):
        tier = (ssm.ParameterTier.STANDARD if len(value) <= STANDARD_PARAMETER_LIMIT
                else ssm.ParameterTier.ADVANCED)
    return ssm.StringParameter(scope, construct_id_, parameter_name=name, string_value=value,
                               tier=tier, description=description)


def publish_with_outputs(scope: Construct, values: dict[str, str], *, name_of,
                         description_of) -> list[ssm.StringParameter]:
    """A parameter per key for runners and later stacks, a stack output per key for people."""
    published = []
    for key, value in values.items():
        cid = construct_id(key)
        published.append(publish(scope, f"{cid}Parameter", name=name_of(key), value=value,
                                 description=description_of(key)))
        CfnOutput(scope, cid, value=value, description=key)
    return published


def value_of(scope: Construct, name: str) -> str:
    """A token for a parameter's value, resolved by CloudFormation at deploy time."""
    return ssm.StringParameter.value_for_string_parameter(scope, name)
