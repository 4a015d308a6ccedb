"""The alerts topic: stuck endpoints, failed runs, watchdog findings."""

from __future__ import annotations

import jsii
from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct


class AlertsTopic(Construct):
    """An SNS topic encrypted with its own key.

    A customer-managed key (not alias/aws/sns) so that EventBridge and CloudWatch can
    publish to it too: the AWS-managed SNS key's policy cannot be extended to them.
    """

    def __init__(self, scope: Construct, construct_id: str):
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self, "Key",
            description="benchstack alerts topic encryption",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        services = [iam.ServicePrincipal(s)
                    for s in ("events.amazonaws.com", "cloudwatch.amazonaws.com")]
        for service in services:
            self.key.grant(service, "kms:Decrypt", "kms:GenerateDataKey*")
        self.topic = sns.Topic(
            self, "Topic",
            display_name="benchstack alerts",
            master_key=self.key,
            enforce_ssl=True,
        )
        # The SSL-only policy replaces SNS's default one, which let this account's alarms
        # and rules publish: say so again, for this account only.
        self.topic.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowAlarmsAndRulesOfThisAccount",
            principals=services,
            actions=["sns:Publish"],
            resources=[self.topic.topic_arn],
            conditions={
                "StringEquals": {"aws:SourceAccount": Stack.of(self).account},
                "ArnLike": {"aws:SourceArn": [
                    f"arn:{Aws.PARTITION}:events:*:{Aws.ACCOUNT_ID}:rule/*",
                    f"arn:{Aws.PARTITION}:cloudwatch:*:{Aws.ACCOUNT_ID}:alarm:*"]},
            },
        ))

    def rule_target(self, message: events.RuleTargetInput) -> events.IRuleTarget:
        """An EventBridge rule target publishing `message` here. Unlike targets.SnsTopic,
        it adds no topic policy statement: that one lets events.amazonaws.com publish with
        no condition, i.e. any account's rule; the statement above already admits this
        account's rules."""
        return _TopicTarget(self.topic.topic_arn, message)

    def grant_publish(self, grantee: iam.IGrantable) -> iam.Grant:
        # exactly what SNS asks KMS for on a publisher's behalf; Topic.grant_publish would
        # add kms:GenerateDataKey*, a wildcard action
        self.key.grant(grantee, "kms:Decrypt", "kms:GenerateDataKey")
        return iam.Grant.add_to_principal(grantee=grantee, actions=["sns:Publish"],
                                          resource_arns=[self.topic.topic_arn])


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    def __init__(self, topic_arn: str, message: events.RuleTargetInput):
        self._arn, self._message = topic_arn, message

    def bind(self, _rule: events.IRule, _id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._arn, input=self._message)
