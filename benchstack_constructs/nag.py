"""Acknowledging cdk-nag findings: every acknowledgment carries its reason."""

from __future__ import annotations

import json

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
    return f"Resource::{flatten(Stack.of(scope).resolve(resource))}"


def flatten(node) -> str:
    """A CloudFormation value as cdk-nag prints it in a finding (its flattenCfnReference)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict) and "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return delimiter.join(flatten(item) for item in items)
    if isinstance(node, dict) and "Fn::Sub" in node:
        return flatten(node["Fn::Sub"])
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        resource, attribute = node["Fn::GetAtt"]
        return f"<{flatten(resource)}.{flatten(attribute)}>"
    if isinstance(node, dict) and "Fn::ImportValue" in node:
        return flatten(node["Fn::ImportValue"])
    if isinstance(node, dict) and "Ref" in node:
        return f"<{flatten(node['Ref'])}>"
    return json.dumps(node, separators=(",", ":"))
