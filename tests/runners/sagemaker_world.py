"""A fake AWS for SageMaker runner tests: botocore Stubber for SageMaker (moto rejects
InstancePools and cannot produce capacity failures), moto for SSM, SNS and SQS."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta, timezone

import boto3
import botocore.session
from botocore.stub import Stubber

from runners import tags
from runners.providers.retry import retry_throttled
from runners.providers.sagemaker import names
from runners.providers.sagemaker.provider import SageMakerProvider
from tests.runners.hub_fixtures import FakeHub, w4a16_model

T0 = datetime(2026, 12, 3, 1, 0, 0, tzinfo=timezone.utc)
RUN_ID = "20261203T010000Z-ab12cd"
IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.1"
CAPACITY = ("Unable to provision requested ML compute capacity due to "
            "InsufficientInstanceCapacity error.")
HEALTH_CHECK = ("The primary container for production variant AllTraffic did not pass the ping "
                "health check. Please check CloudWatch logs for this endpoint.")


class Clock:
    """Fake time: `sleep` advances `now`, and is recorded."""

    def __init__(self, start: datetime = T0):
        self.moment, self.sleeps = start, []

    def now(self) -> datetime:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.moment += timedelta(seconds=seconds)


@functools.cache
def _boto3_session():
    return boto3.Session(botocore_session=_botocore_session())


@functools.cache
def _botocore_session():
    """One session for every test: loading the SageMaker model once saves seconds."""
    return botocore.session.get_session()


class World:
    """Regions with deployed experiment stacks (SSM names), an alerts topic per region
    with an SQS queue subscribed to read alerts back, and a stubbed SageMaker per region.
    Use inside moto's mock_aws."""

    def __init__(self, experiment, deployed: tuple[str, ...]):
        self.experiment, self.clock = experiment, Clock()
        self.sagemaker, self.stubs, self.queues = {}, {}, {}
        for region in experiment.regions:
            client = _botocore_session().create_client("sagemaker", region_name=region)
            self.sagemaker[region], self.stubs[region] = client, Stubber(client)
            self.stubs[region].activate()
        for region in deployed:
            ssm = boto3.client("ssm", region_name=region)
            for key, value in ((names.ENDPOINT_CONFIG_NAME, f"cfg-{region}"),
                               (names.MODEL_NAME, f"model-{region}")):
                ssm.put_parameter(Name=names.parameter(experiment.name, key), Value=value,
                                  Type="String")
            topic = boto3.client("sns", region_name=region).create_topic(Name="alerts")
            ssm.put_parameter(Name=names.ALERTS_TOPIC_PARAMETER, Value=topic["TopicArn"],
                              Type="String")
            sqs = boto3.client("sqs", region_name=region)
            queue = sqs.create_queue(QueueName="alerts-inbox")["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
            boto3.client("sns", region_name=region).subscribe(
                TopicArn=topic["TopicArn"], Protocol="sqs",
                Endpoint=arn["Attributes"]["QueueArn"])
            self.queues[region] = queue
        self.hub = FakeHub()
        self.hub.add(experiment.model.id, w4a16_model(ignore=["re:.*vision_tower.*"]))

    def factory(self, service: str, region: str):
        if service == "sagemaker":
            return self.sagemaker[region]
        return _boto3_session().client(service, region_name=region)

    def provider(self, **kwargs) -> SageMakerProvider:
        return SageMakerProvider(
            self.experiment, client_factory=self.factory, now=self.clock.now, **kwargs,
            fetch=self.hub.fetch,
            retry=functools.partial(retry_throttled, sleep=self.clock.sleep, rand=lambda: 0.5))

    def alerts(self, region: str) -> list[dict]:
        sqs = boto3.client("sqs", region_name=region)
        messages = sqs.receive_message(QueueUrl=self.queues[region],
                                       MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in messages]

    def assert_all_stubs_used(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()

    # ------------------------------------------------------------ stubbed responses

    def endpoint(self) -> str:
        return names.endpoint_name(self.experiment.name, RUN_ID)

    def expect_create(self, region: str, *, created_at: datetime = T0,
                      execution_arn: str | None = None) -> None:
        billable = tags.billable_tags(self.experiment.name, RUN_ID, created_at,
                                      self.experiment.ttl_hours, execution_arn)
        self.stubs[region].add_response(
            "create_endpoint",
            {"EndpointArn": f"arn:aws:sagemaker:{region}:123456789012:endpoint/{self.endpoint()}"},
            {"EndpointName": self.endpoint(), "EndpointConfigName": f"cfg-{region}",
             "Tags": [{"Key": k, "Value": v} for k, v in billable.items()]})

    def expect_describe(self, region: str, status: str, *, reason: str | None = None,
                        placed: str | None = None) -> None:
        response = {
            "EndpointName": self.endpoint(),
            "EndpointArn": f"arn:aws:sagemaker:{region}:123456789012:endpoint/{self.endpoint()}",
            "EndpointConfigName": f"cfg-{region}",
            "EndpointStatus": status, "CreationTime": T0, "LastModifiedTime": T0,
        }
        if reason:
            response["FailureReason"] = reason
        if placed:
            response["ProductionVariants"] = [{
                "VariantName": "AllTraffic",
                "DeployedImages": [{
                    "SpecifiedImage": IMAGE.format(region=region),
                    "ResolvedImage": f"763104351884.dkr.ecr.{region}.amazonaws.com/vllm@sha256:"
                                     + "ab" * 32,
                    "ResolutionTime": T0}],
                "CurrentInstanceCount": 1,
                "InstancePools": [
                    {"InstanceType": pool.instance_type,
                     "CurrentInstanceCount": int(pool.instance_type == placed)}
                    for pool in self.experiment.sagemaker.instance_pools],
            }]
        self.stubs[region].add_response("describe_endpoint", response,
                                        {"EndpointName": self.endpoint()})

    def expect_delete(self, region: str, *, refused: bool = False, gone: bool = False) -> None:
        arn = f"arn:aws:sagemaker:{region}:123456789012:endpoint/{self.endpoint()}"
        if refused:
            self.stubs[region].add_client_error(
                "delete_endpoint", "ValidationException",
                f'Cannot update in-progress endpoint "{arn}".',
                expected_params={"EndpointName": self.endpoint()})
        elif gone:
            self.stubs[region].add_client_error(
                "delete_endpoint", "ValidationException", f'Could not find endpoint "{arn}".',
                expected_params={"EndpointName": self.endpoint()})
        else:
            self.stubs[region].add_response("delete_endpoint", {},
                                            {"EndpointName": self.endpoint()})
