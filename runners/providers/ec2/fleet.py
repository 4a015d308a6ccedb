"""One CreateFleet request that tries every (instance type x AZ) of a region in priority
order, and the reading of its answer. Pure functions: no API calls here.

Instance types are tried in the experiment's order, each in every offered AZ before the
next type; EC2 reports every override it could not fill in Errors[], which becomes the
placement's record of refusals.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from runners.providers.base import ProvisionError

LAUNCH_TEMPLATES_PARAMETER = "/benchstack/ec2/{experiment}/launch-templates"
# Published by the foundation stack (stacks/names.py foundation_parameter); a test keeps
# the two in step. Runners do not import the CDK side.
SUBNETS_PARAMETER = "/benchstack/foundation/public-subnet-ids"
# Of the 8 KiB a workflow task may return (runners/workflow/execution.py MAX_RESULT_BYTES),
# what the placement may take; the rest is the task's status, key and error message.
PLACEMENT_MAX_BYTES = 4 * 1024

# Per-override error codes (EC2 API reference, "Error codes"). Capacity: this pool cannot
# fill the request now, another zone or region may. Quota: the account's limit; no other
# zone helps, and a quota increase is the fix.
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity",  # on-demand: none of this type in this AZ now
    "InsufficientCapacity",
    "UnfulfillableCapacity",  # spot: no spare capacity
    "Unsupported",  # this type is not offered in this AZ
    "InsufficientFreeAddressesInSubnet",  # this AZ's subnet is full; another AZ may not be
    "SpotMaxPriceTooLow",
})
QUOTA_CODES = frozenset({
    "VcpuLimitExceeded",  # running on-demand vCPUs per instance family
    "InstanceLimitExceeded",
    "MaxSpotInstanceCountExceeded",  # spot vCPUs per family
    "MaxSpotFleetRequestCountExceeded",
    "VolumeLimitExceeded",
    "MaxIOPSLimitExceeded",
})
# Service Quotas names, by instance family prefix, so a quota error says what to raise.
_QUOTA_NAMES = {
    ("g", "on-demand"): "Running On-Demand G and VT instances",
    ("inf", "on-demand"): "Running On-Demand Inf instances",
    ("trn", "on-demand"): "Running On-Demand Trn instances",
    ("g", "spot"): "All G and VT Spot Instance Requests",
    ("inf", "spot"): "All Inf Spot Instance Requests",
    ("trn", "spot"): "All Trn Spot Instance Requests",
}


@dataclass(frozen=True)
class Candidate:
    """One override: an instance type in one AZ's subnet, from its launch template."""

    instance_type: str
    subnet_id: str
    az: str
    launch_template_id: str


def error_kind(code: str) -> str:
    if code in CAPACITY_CODES:
        return ProvisionError.CAPACITY
    if code in QUOTA_CODES:
        return ProvisionError.QUOTA
    return ProvisionError.FATAL


def quota_name(instance_type: str, market: str) -> str:
    family = instance_type.split(".", 1)[0]
    prefix = next((p for p, m in _QUOTA_NAMES if family.startswith(p) and m == market), None)
    return _QUOTA_NAMES.get((prefix, market), f"the {market} vCPU quota for {family}")


def candidates(instance_types: list[str], subnets: list[tuple[str, str]],
               template_ids: dict[str, str],
               offered: set[tuple[str, str]]) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Every (type, AZ) to try, in priority order, and what was skipped and why.

    `subnets` is [(subnet id, AZ)]; `offered` is {(type, AZ)} from
    DescribeInstanceTypeOfferings; a type without a launch template in this region is
    skipped (its experiment stack was not deployed here).
    """
    chosen: list[Candidate] = []
    skipped: list[dict[str, Any]] = []
    for itype in instance_types:
        if itype not in template_ids:
            skipped.append({"instance_type": itype, "az": None,
                            "reason": "no launch template in this region"})
            continue
        for subnet_id, az in subnets:
            if (itype, az) in offered:
                chosen.append(Candidate(itype, subnet_id, az, template_ids[itype]))
            else:
                skipped.append({"instance_type": itype, "az": az,
                                "reason": "not offered in this AZ (DescribeInstanceTypeOfferings)"})
    return chosen, skipped


def fleet_request(chosen: list[Candidate], *, market: str, tags: dict[str, str],
                  client_token: str) -> dict[str, Any]:
    """CreateFleet parameters: instant, one instance, overrides in priority order."""
    configs: dict[str, dict[str, Any]] = {}
    for priority, cand in enumerate(chosen):
        config = configs.setdefault(cand.launch_template_id, {
            "LaunchTemplateSpecification": {"LaunchTemplateId": cand.launch_template_id,
                                            "Version": "$Latest"},
            "Overrides": [],
        })
        config["Overrides"].append({"InstanceType": cand.instance_type,
                                    "SubnetId": cand.subnet_id,
                                    "Priority": float(priority)})
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    spot = market == "spot"
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": client_token,
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "OnDemandTargetCapacity": 0 if spot else 1,
            "SpotTargetCapacity": 1 if spot else 0,
            "DefaultTargetCapacityType": "spot" if spot else "on-demand",
        },
        "LaunchTemplateConfigs": list(configs.values()),
        "TagSpecifications": [{"ResourceType": kind, "Tags": tag_list}
                              for kind in ("fleet", "instance", "volume")],
    }
    if spot:
        request["SpotOptions"] = {"AllocationStrategy": "capacity-optimized-prioritized",
                                  "InstanceInterruptionBehavior": "terminate"}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "prioritized"}
    return request


def _where(overrides: dict[str, Any], by_subnet: dict[str, Candidate]) -> dict[str, Any]:
    cand = by_subnet.get(overrides.get("SubnetId", ""))
    return {"instance_type": overrides.get("InstanceType"),
            "az": overrides.get("AvailabilityZone") or (cand.az if cand else None),
            "subnet_id": overrides.get("SubnetId")}


def read_response(response: dict[str, Any], chosen: list[Candidate]
                  ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the placed instance or None, every refused override) from a CreateFleet answer."""
    by_subnet = {c.subnet_id: c for c in chosen}
    refused = []
    for error in response.get("Errors", []):
        overrides = error.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
        code = error.get("ErrorCode", "")
        refused.append({**_where(overrides, by_subnet), "code": code,
                        "kind": error_kind(code), "message": error.get("ErrorMessage", "")})
    for instance in response.get("Instances", []):
        if instance.get("InstanceIds"):
            overrides = instance.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
            where = _where(overrides, by_subnet)
            where["instance_type"] = instance.get("InstanceType") or where["instance_type"]
            where["az"] = instance.get("AvailabilityZone") or where["az"]
            return {**where, "instance_id": instance["InstanceIds"][0],
                    "lifecycle": instance.get("Lifecycle")}, refused
    return None, refused


def refusal_error(region: str, refused: list[dict[str, Any]], market: str,
                  detail: dict[str, Any]) -> ProvisionError:
    """Why nothing was placed in `region`: quota beats fatal beats capacity."""
    kinds = {r["kind"] for r in refused}
    if ProvisionError.QUOTA in kinds:
        r = next(r for r in refused if r["kind"] == ProvisionError.QUOTA)
        return ProvisionError(ProvisionError.QUOTA, (
            f"{r['code']} for {r['instance_type']} in {region}: {r['message']} "
            f"Raise the Service Quotas limit \"{quota_name(r['instance_type'], market)}\" "
            f"in {region}; other zones share the quota, so benchstack stops here."), detail)
    if ProvisionError.FATAL in kinds:
        r = next(r for r in refused if r["kind"] == ProvisionError.FATAL)
        return ProvisionError(ProvisionError.FATAL, (
            f"{r['code'] or 'error'} for {r['instance_type']} in {r['az']}: {r['message']}"),
            detail)
    tried = ", ".join(sorted({f"{r['instance_type']}@{r['az']}" for r in refused})) or "nothing"
    return ProvisionError(ProvisionError.CAPACITY,
                          f"no capacity in {region}: refused {tried}", detail)


def as_dicts(chosen: list[Candidate]) -> list[dict[str, Any]]:
    return [asdict(c) for c in chosen]


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _where_text(entry: dict[str, Any]) -> str:
    return f"{entry.get('instance_type')}" + (f"@{entry['az']}" if entry.get("az") else "")


def compact(placement: dict[str, Any], max_bytes: int = PLACEMENT_MAX_BYTES) -> dict[str, Any]:
    """The placement as the workflow carries it: every override tried and skipped as
    "type@az" (skips grouped by reason), refusals with EC2's messages while they fit in
    `max_bytes`; past that the messages go (longest first), then refusals are grouped by
    code. Each step keeps every type and zone named, so the record still says what was
    refused where; only the wording of EC2's messages can be lost."""
    out = dict(placement)
    out["tried"] = [_where_text(c) for c in placement.get("tried", [])]
    skipped: dict[str, list[str]] = {}
    for entry in placement.get("skipped", []):
        skipped.setdefault(entry["reason"], []).append(_where_text(entry))
    out["skipped"] = [{"reason": reason, "where": where} for reason, where in skipped.items()]
    refused = [dict(r) for r in placement.get("refused", [])]
    out["refused"] = refused
    for entry in sorted(refused, key=lambda r: len(r.get("message") or ""), reverse=True):
        if _json_bytes(out) <= max_bytes:
            return out
        entry.pop("message", None)
        entry.pop("subnet_id", None)
    if _json_bytes(out) > max_bytes:
        grouped: dict[tuple[str, str], list[str]] = {}
        for entry in refused:
            grouped.setdefault((entry["code"], entry["kind"]), []).append(_where_text(entry))
        out["refused"] = [{"code": code, "kind": kind, "where": where}
                          for (code, kind), where in grouped.items()]
    return out
