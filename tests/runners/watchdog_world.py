"""A moto world for the watchdog: tagged, untagged and unexpired resources in three
regions. Shared by the watchdog tests and benchmarks/watchdog_sweep.py.

moto rejects ml.g6.* SageMaker instance types, so endpoints use ml.g4dn.xlarge; moto 5.2.5
accepts g6.xlarge for EC2 instances and fleets, so those use the type benchstack uses.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3

from runners import tags

REGIONS = ("us-east-1", "us-east-2", "us-west-2")
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
EXPIRED = NOW - timedelta(hours=1)
UNEXPIRED = NOW + timedelta(hours=2)
SAGEMAKER_INSTANCE_TYPE = "ml.g4dn.xlarge"  # moto rejects ml.g6.*
EC2_INSTANCE_TYPE = "g6.xlarge"
ROLE_ARN = "arn:aws:iam::123456789012:role/benchstack-sagemaker"


def run_tags(run_id: str, expires: datetime | str | None, *, managed: bool = True,
             execution_arn: str | None = None) -> dict[str, str]:
    found = {tags.EXPERIMENT: "e2b-test", tags.RUN_ID: run_id}
    if managed:
        found[tags.MANAGED] = "true"
    if isinstance(expires, datetime):
        found[tags.EXPIRES_AT] = tags.expires_at(expires, 0)
    elif expires is not None:
        found[tags.EXPIRES_AT] = expires
    if execution_arn:
        found[tags.EXECUTION_ARN] = execution_arn
    return found


def _pairs(found: dict[str, str]) -> list[dict]:
    return [{"Key": k, "Value": v} for k, v in found.items()]


class World:
    """Creates resources straight through boto3 (inside mock_aws) and reads what is left."""

    def __init__(self, session: boto3.session.Session | None = None):
        self.session = session or boto3.session.Session()
        self._clients: dict[tuple[str, str], object] = {}
        self._templates: dict[str, str] = {}

    def client(self, service: str, region: str):
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self.session.client(service, region_name=region)
        return self._clients[key]

    def endpoint(self, region: str, name: str, found: dict[str, str], *,
                 config_tags: dict[str, str] | None = None,
                 model_tags: dict[str, str] | None = None) -> None:
        """An endpoint with its own config and model (tagged like the endpoint unless told)."""
        sm = self.client("sagemaker", region)
        sm.create_model(ModelName=name, ExecutionRoleArn=ROLE_ARN,
                        PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-2."
                                                   "amazonaws.com/vllm:0.30.0"},
                        Tags=_pairs(found if model_tags is None else model_tags))
        sm.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[{"VariantName": "main", "ModelName": name,
                                 "InitialInstanceCount": 1,
                                 "InstanceType": SAGEMAKER_INSTANCE_TYPE}],
            Tags=_pairs(found if config_tags is None else config_tags))
        sm.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=_pairs(found))

    def instance(self, region: str, found: dict[str, str]) -> str:
        ec2 = self.client("ec2", region)
        spec = [{"ResourceType": "instance", "Tags": _pairs(found)}] if found else []
        answer = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1,
                                   InstanceType=EC2_INSTANCE_TYPE, TagSpecifications=spec)
        return answer["Instances"][0]["InstanceId"]

    def fleet(self, region: str, found: dict[str, str]) -> str:
        """An instant fleet of one instance; fleet and instance carry the same tags."""
        ec2 = self.client("ec2", region)
        if region not in self._templates:
            self._templates[region] = ec2.create_launch_template(
                LaunchTemplateName="benchstack-engine",
                LaunchTemplateData={"ImageId": "ami-12c6146b",
                                    "InstanceType": EC2_INSTANCE_TYPE},
            )["LaunchTemplate"]["LaunchTemplateId"]
        answer = ec2.create_fleet(
            Type="instant",
            LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {
                "LaunchTemplateId": self._templates[region], "Version": "$Latest"}}],
            TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                         "DefaultTargetCapacityType": "on-demand"},
            TagSpecifications=[{"ResourceType": "fleet", "Tags": _pairs(found)},
                               {"ResourceType": "instance", "Tags": _pairs(found)}])
        return answer["FleetId"]

    # ------------------------------------------------------------------ what is left

    def endpoints(self, region: str) -> set[str]:
        pages = self.client("sagemaker", region).get_paginator("list_endpoints").paginate()
        return {e["EndpointName"] for page in pages for e in page["Endpoints"]}

    def endpoint_configs(self, region: str) -> set[str]:
        pages = self.client("sagemaker", region).get_paginator(
            "list_endpoint_configs").paginate()
        return {c["EndpointConfigName"] for page in pages for c in page["EndpointConfigs"]}

    def models(self, region: str) -> set[str]:
        pages = self.client("sagemaker", region).get_paginator("list_models").paginate()
        return {m["ModelName"] for page in pages for m in page["Models"]}

    def live_instances(self, region: str) -> set[str]:
        pages = self.client("ec2", region).get_paginator("describe_instances").paginate(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
        return {i["InstanceId"] for page in pages for r in page["Reservations"]
                for i in r["Instances"]}

    def fleet_states(self, region: str) -> dict[str, str]:
        fleets = self.client("ec2", region).describe_fleets()["Fleets"]
        return {f["FleetId"]: f["FleetState"] for f in fleets}
