"""Regions benchstack deploys to, with their Availability Zone names.

CDK cannot look AZs up without credentials, so the VPC is built from this list. AZ names
are account-specific aliases, but every account has these names in these regions.
"""

from __future__ import annotations

AVAILABILITY_ZONES: dict[str, tuple[str, ...]] = {
    "us-east-1": tuple(f"us-east-1{z}" for z in "abcdef"),
    "us-east-2": tuple(f"us-east-2{z}" for z in "abc"),
    "us-west-2": tuple(f"us-west-2{z}" for z in "abcd"),
    "eu-west-1": tuple(f"eu-west-1{z}" for z in "abc"),
    "eu-central-1": tuple(f"eu-central-1{z}" for z in "abc"),
    "ap-northeast-1": tuple(f"ap-northeast-1{z}" for z in "acd"),
    "ap-southeast-2": tuple(f"ap-southeast-2{z}" for z in "abc"),
}

KNOWN = tuple(AVAILABILITY_ZONES)
