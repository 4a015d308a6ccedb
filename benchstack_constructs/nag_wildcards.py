"""Acknowledging cdk-nag's IAM5 (wildcard) findings one by one, each by its exact id.

IAM5 reports every wildcard resource or action as its own finding; acknowledging the bare
rule does not cover them, and acknowledging a guessed list drifts from the policy. This
reads the role's policies as cdk-nag does and acknowledges exactly what is there, with one
reason, so a new wildcard added later is acknowledged only by whoever adds it here.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from benchstack_constructs.nag import acknowledge, flatten


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def wildcard_findings(document: dict) -> list[str]:
    """The IAM5 findings of a resolved policy document, in cdk-nag's words."""
    found: dict[str, None] = {}
    for statement in document.get("Statement", []):
        if statement.get("Effect") != "Allow":
            continue
        for action in _as_list(statement.get("Action", [])):
            if "*" in action:
                found[f"Action::{action}"] = None
        for resource in _as_list(statement.get("Resource", [])):
            flat = flatten(resource)
            if "*" in flat:
                found[f"Resource::{flat}"] = None
    return list(found)


def acknowledge_wildcards(role: IConstruct, reason: str) -> list[str]:
    """Acknowledge every IAM5 finding on the policies under `role`; call it after the last
    statement is added. Returns the findings (tests read them)."""
    stack = Stack.of(role)
    findings: list[str] = []
    for child in role.node.find_all():
        if isinstance(child, iam.CfnPolicy):
            findings += wildcard_findings(stack.resolve(child.policy_document))
    for finding in dict.fromkeys(findings):
        acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)
    return findings
