"""FoundationStack: the free, durable base of one region (buckets, alerts, network)."""

from __future__ import annotations

from aws_cdk import Environment, Stack, Tags
from constructs import Construct

from benchstack_constructs import parameters
from benchstack_constructs.alerts import AlertsTopic
from benchstack_constructs.network import BenchmarkNetwork
from benchstack_constructs.storage import AccessLogsBucket, CacheBucket, ResultsBucket
from runners import regions
from stacks import names


class FoundationStack(Stack):
    def __init__(self, scope: Construct, region: str, *, account: str | None = None):
        super().__init__(
            scope, names.foundation(region),
            env=Environment(account=account, region=region),
            description=f"benchstack foundation for {region}: results and cache buckets, "
                        "alerts topic, public-subnet VPC without NAT",
        )
        Tags.of(self).add("benchstack:component", "foundation")
        logs = AccessLogsBucket(self, "AccessLogs")
        self.results = ResultsBucket(self, "Results", access_logs=logs.bucket)
        self.cache = CacheBucket(self, "Cache", access_logs=logs.bucket)
        self.alerts = AlertsTopic(self, "Alerts")
        self.network = BenchmarkNetwork(
            self, "Network",
            az_count=len(regions.AVAILABILITY_ZONES[region]),
            flow_logs_bucket=logs.bucket,
        )
        self._publish({
            "results-bucket": self.results.bucket.bucket_name,
            "cache-bucket": self.cache.bucket.bucket_name,
            "alerts-topic-arn": self.alerts.topic.topic_arn,
            "vpc-id": self.network.vpc.vpc_id,
            "engine-security-group-id": self.network.engine_security_group.security_group_id,
            "public-subnet-ids": ",".join(self.network.public_subnet_ids),
        })

    def _publish(self, values: dict[str, str]) -> None:
        """SSM parameters for runners and later stacks; stack outputs for people."""
        parameters.publish_with_outputs(self, values, name_of=names.foundation_parameter,
                                        description_of=lambda key: f"benchstack foundation: {key}")
