"""Acknowledging cdk-nag findings: every acknowledgment carries its reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


PACK = "AwsSolutions"


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge cdk-nag `rule` (e.g. "AwsSolutions-S1") on `construct` and its children."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} needs a reason")
    # "<plugin>::<rule>" is the id the nag plugin prints ("Acknowledge with ...").
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PACK}::{rule}", reason=reason))


def wildcard_finding(scope: IConstruct, resource: str) -> str:
    """The id cdk-nag gives a wildcard resource in an IAM policy ("Resource::arn:...:*"),
    for `acknowledge(policy, f"AwsSolutions-IAM5[{finding}]", ...)`: tokens are resolved
    and flattened the way cdk-nag prints them ("<AWS::AccountId>", "<Logical.Arn>")."""
    return f"Resource::{_flatten(Stack.of(scope).resolve(resource))}"


def _flatten(node) -> str:
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict) and "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return delimiter.join(_flatten(item) for item in items)
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        resource, attribute = node["Fn::GetAtt"]
        return f"<{_flatten(resource)}.{_flatten(attribute)}>"
    if isinstance(node, dict) and "Ref" in node:
        return f"<{_flatten(node['Ref'])}>"
    raise ValueError(f"cannot name a cdk-nag finding for {node!r}")
