"""Acknowledging cdk-nag findings: every acknowledgment carries its reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


PACK = "AwsSolutions"


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge cdk-nag `rule` (e.g. "AwsSolutions-S1") on `construct` and its children."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} needs a reason")
    # "<plugin>::<rule>" is the id the nag plugin prints ("Acknowledge with ...").
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PACK}::{rule}", reason=reason))
