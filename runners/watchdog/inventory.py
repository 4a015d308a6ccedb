"""What the watchdog sweeps: for each kind of resource a run creates, how to list the ones
tagged benchstack:managed=true in a region, what its state allows, and how to delete it.

Listing uses paginators only. SageMaker lists carry no tags, so each item costs one
ListTags call; EC2 filters by tag on the server and returns tags with each item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator

from botocore.exceptions import ClientError

from runners import tags

DELETABLE = "deletable"
TRANSITIONAL = "transitional"  # cannot be deleted until it leaves this state
DELETING = "deleting"  # already on its way out: left alone


@dataclass(frozen=True)
class Resource:
    region: str
    kind: str
    id: str
    state: str
    tags: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    arn: str | None = None
    problem: str | None = None  # set when the resource could not be read: reported, untouched


def _tag_dict(pairs: list[dict]) -> dict[str, str]:
    return {pair["Key"]: pair["Value"] for pair in pairs}


def _managed(resource_tags: dict[str, str]) -> bool:
    return resource_tags.get(tags.MANAGED) == "true"


def _sagemaker_tags(client, arn: str) -> dict[str, str] | None:
    """The resource's tags, or None when it vanished between the list and this call."""
    pairs: list[dict] = []
    try:
        for page in client.get_paginator("list_tags").paginate(ResourceArn=arn):
            pairs += page["Tags"]
    except ClientError as exc:
        # the ARN came from the list a moment ago: "invalid" or "not found" means it is gone
        if exc.response["Error"]["Code"] in ("ValidationException", "ResourceNotFound"):
            return None
        raise
    return _tag_dict(pairs)


@dataclass(frozen=True)
class SageMakerKind:
    """A SageMaker resource listed by `list_operation` and deleted by name."""

    name: str
    list_operation: str
    result_key: str
    name_key: str
    arn_key: str
    delete_operation: str
    status_key: str | None = None
    transitional: frozenset[str] = frozenset()
    deleting: frozenset[str] = frozenset()
    # a config or model must outlive the endpoints of its run (SageMaker reads them while
    # an endpoint exists), so the sweep keeps it while one survives
    follows_endpoints: bool = False
    service: str = "sagemaker"

    def find(self, client, region: str) -> Iterator[Resource]:
        for page in client.get_paginator(self.list_operation).paginate():
            for item in page[self.result_key]:
                listed = dict(region=region, kind=self.name, id=item[self.name_key],
                              state=item.get(self.status_key, "-") if self.status_key else "-",
                              created_at=item.get("CreationTime"), arn=item[self.arn_key])
                try:
                    found = _sagemaker_tags(client, item[self.arn_key])
                except ClientError as exc:  # one unreadable item must not hide the others
                    yield Resource(**listed, problem=f"reading tags failed: {exc}")
                    continue
                if found is not None and _managed(found):
                    yield Resource(**listed, tags=found)

    def phase(self, state: str) -> str:
        if state in self.deleting:
            return DELETING
        return TRANSITIONAL if state in self.transitional else DELETABLE

    def delete(self, client, resource: Resource) -> None:
        getattr(client, self.delete_operation)(**{self.name_key: resource.id})


class DeleteRefused(RuntimeError):
    """The service answered but did not delete (EC2 reports per-item failures in a 200)."""


@dataclass(frozen=True)
class Ec2Fleets:
    """EC2 fleets (benchstack makes instant fleets). Deleting one terminates its instances;
    any other type is swept too, since a maintain fleet would replace what we terminate.

    DescribeFleets without FleetIds never returns instant fleets (EC2 API reference,
    DescribeFleets: "If a fleet is of type instant, you must specify the fleet ID ...
    otherwise the fleet does not appear in the response"). So the ids of tagged fleets come
    from DescribeTags (resource-type fleet), are described by id, and the listing without
    ids adds any other fleet type."""

    name: str = "ec2-fleet"
    service: str = "ec2"
    follows_endpoints: bool = False
    ids_per_call: int = 100  # the API documents no limit on FleetIds; chunks stay small

    def _tagged_ids(self, client) -> list[str]:
        filters = [{"Name": "resource-type", "Values": ["fleet"]},
                   {"Name": "key", "Values": [tags.MANAGED]},
                   {"Name": "value", "Values": ["true"]}]
        ids: list[str] = []
        for page in client.get_paginator("describe_tags").paginate(Filters=filters):
            ids += [t["ResourceId"] for t in page["Tags"] if t["ResourceId"] not in ids]
        return ids

    def _fleets(self, client) -> Iterator[dict]:
        ids = self._tagged_ids(client)
        for start in range(0, len(ids), self.ids_per_call):
            for page in client.get_paginator("describe_fleets").paginate(
                    FleetIds=ids[start:start + self.ids_per_call]):
                yield from page["Fleets"]
        for page in client.get_paginator("describe_fleets").paginate():
            yield from (f for f in page["Fleets"] if f["FleetId"] not in ids)

    def find(self, client, region: str) -> Iterator[Resource]:
        for fleet in self._fleets(client):
            found = _tag_dict(fleet.get("Tags", []))
            if _managed(found):
                yield Resource(region=region, kind=self.name, id=fleet["FleetId"],
                               state=fleet.get("FleetState", "-"), tags=found,
                               created_at=fleet.get("CreateTime"))

    def phase(self, state: str) -> str:
        return DELETING if state.startswith("deleted") else DELETABLE

    def delete(self, client, resource: Resource) -> None:
        answer = client.delete_fleets(FleetIds=[resource.id], TerminateInstances=True)
        for failure in answer.get("UnsuccessfulFleetDeletions", []):
            error = failure.get("Error", {})
            raise DeleteRefused(f"{error.get('Code', 'Unknown')}: {error.get('Message', '')}")


# Instances in these states still bill (or can be started again); shutting-down and
# terminated ones are already leaving and are not listed at all.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True)
class Ec2Instances:
    name: str = "ec2-instance"
    service: str = "ec2"
    follows_endpoints: bool = False

    def find(self, client, region: str) -> Iterator[Resource]:
        filters = [{"Name": f"tag:{tags.MANAGED}", "Values": ["true"]},
                   {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)}]
        for page in client.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    found = _tag_dict(instance.get("Tags", []))
                    if _managed(found):  # the filter already did this; never trust one check
                        yield Resource(region=region, kind=self.name,
                                       id=instance["InstanceId"],
                                       state=instance["State"]["Name"], tags=found,
                                       created_at=instance.get("LaunchTime"))

    def phase(self, state: str) -> str:
        return DELETABLE

    def delete(self, client, resource: Resource) -> None:
        client.terminate_instances(InstanceIds=[resource.id])


ENDPOINTS = SageMakerKind(
    name="sagemaker-endpoint", list_operation="list_endpoints", result_key="Endpoints",
    name_key="EndpointName", arn_key="EndpointArn", delete_operation="delete_endpoint",
    status_key="EndpointStatus",
    transitional=frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"}),
    deleting=frozenset({"Deleting"}),
)
ENDPOINT_CONFIGS = SageMakerKind(
    name="sagemaker-endpoint-config", list_operation="list_endpoint_configs",
    result_key="EndpointConfigs", name_key="EndpointConfigName", arn_key="EndpointConfigArn",
    delete_operation="delete_endpoint_config", follows_endpoints=True,
)
MODELS = SageMakerKind(
    name="sagemaker-model", list_operation="list_models", result_key="Models",
    name_key="ModelName", arn_key="ModelArn", delete_operation="delete_model",
    follows_endpoints=True,
)

# Endpoints before the configs and models they use; fleets before their instances.
KINDS = (ENDPOINTS, ENDPOINT_CONFIGS, MODELS, Ec2Fleets(), Ec2Instances())
