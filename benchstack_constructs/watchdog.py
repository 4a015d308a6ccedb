"""The teardown watchdog: a runner function on a schedule, allowed to list everything it
must judge and to delete only what carries benchstack:managed=true."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from benchstack_constructs.alerts import AlertsTopic
from benchstack_constructs.nag import acknowledge, wildcard_finding
from benchstack_constructs.runner_function import RunnerFunction
from runners import tags
from runners.watchdog.lambda_handler import TIMEOUT_S
from runners.watchdog.report import NAMESPACE

AUDIT_PREFIX = "watchdog/"
MANAGED_CONDITION = {"StringEquals": {f"aws:ResourceTag/{tags.MANAGED}": "true"}}


@dataclass(frozen=True)
class WatchdogProps:
    regions: tuple[str, ...]
    results_bucket_parameter: str  # SSM parameter naming the home region's results bucket
    alerts: AlertsTopic
    rate: Duration = Duration.minutes(15)
    dry_run: bool = False
    timeout: Duration = Duration.seconds(TIMEOUT_S)  # under the rate: sweeps never overlap


class Watchdog(Construct):
    def __init__(self, scope: Construct, construct_id: str, props: WatchdogProps):
        super().__init__(scope, construct_id)
        # The bucket name is read from the foundation's SSM parameter at deploy time rather
        # than referenced across stacks: the audit policy then names it the same way at
        # synth and at validation, so its cdk-nag acknowledgment can be exact.
        bucket_name = ssm.StringParameter.value_for_string_parameter(
            self, props.results_bucket_parameter)
        self.runner = RunnerFunction(
            self, "Sweep",
            handler="runners.watchdog.lambda_handler.handler",
            timeout=props.timeout,
            description="benchstack watchdog: deletes expired or orphaned tagged resources "
                        f"in {', '.join(props.regions)}",
            environment={
                "WATCHDOG_REGIONS": ",".join(props.regions),
                "WATCHDOG_DRY_RUN": "true" if props.dry_run else "false",
                "RESULTS_BUCKET": bucket_name,
                "ALERTS_TOPIC_ARN": props.alerts.topic.topic_arn,
            },
            # the log is the record of what was deleted and why: keep it longer than runs'
            log_retention=logs.RetentionDays.THREE_MONTHS,
        )
        self.function = self.runner.function
        self._allow_sweep(props.regions)
        props.alerts.grant_publish(self.function)
        self._allow_audit(bucket_name)
        self.rule = events.Rule(
            self, "Schedule",
            schedule=events.Schedule.rate(props.rate),
            description="benchstack watchdog sweep",
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
        self.alarm = self._alarm_when_failing_or_silent(props)

    def _allow_sweep(self, regions: tuple[str, ...]) -> None:
        sagemaker = self._arns(regions, "sagemaker", "endpoint/*", "endpoint-config/*",
                               "model/*")
        ec2 = self._arns(regions, "ec2", "instance/*", "fleet/*")
        executions = self._arns(regions, "states", "execution:*")
        statements = [
            iam.PolicyStatement(
                sid="ListAndDescribe",
                actions=["sagemaker:ListEndpoints", "sagemaker:ListEndpointConfigs",
                         "sagemaker:ListModels", "ec2:DescribeInstances",
                         "ec2:DescribeFleets", "ec2:DescribeTags"],
                resources=["*"],
                conditions={"StringEquals": {"aws:RequestedRegion": list(regions)}}),
            iam.PolicyStatement(
                sid="PublishCounts", actions=["cloudwatch:PutMetricData"], resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE}}),
            iam.PolicyStatement(
                sid="ReadTags", actions=["sagemaker:ListTags"], resources=sagemaker),
            iam.PolicyStatement(
                sid="DeleteManagedSageMaker",
                actions=["sagemaker:DeleteEndpoint", "sagemaker:DeleteEndpointConfig",
                         "sagemaker:DeleteModel"],
                resources=sagemaker, conditions=MANAGED_CONDITION),
            iam.PolicyStatement(
                sid="DeleteManagedEc2",
                actions=["ec2:TerminateInstances", "ec2:DeleteFleets"],
                resources=ec2, conditions=MANAGED_CONDITION),
            iam.PolicyStatement(
                sid="ReadRunStatus", actions=["states:DescribeExecution"],
                resources=executions),
        ]
        self.policy = iam.Policy(self, "SweepPolicy", statements=statements)
        self.policy.attach_to_role(self.runner.role)
        self.function.node.add_dependency(self.policy)  # no sweep before it may sweep
        reasons = [
            (["*"], "List/Describe of SageMaker endpoints, configs, models and EC2 "
                    "instances, fleets, and cloudwatch:PutMetricData support no "
                    "resource-level permissions; limited to the swept regions "
                    f"(aws:RequestedRegion) and to the {NAMESPACE} namespace"),
            (sagemaker, "SageMaker names are chosen per run; ListTags must read untagged "
                        "resources to tell them apart, and Delete* is conditioned on "
                        f"aws:ResourceTag/{tags.MANAGED}=true"),
            (ec2, "instance and fleet ids exist only once a run places them; "
                  "TerminateInstances and DeleteFleets are conditioned on "
                  f"aws:ResourceTag/{tags.MANAGED}=true"),
            (executions, "executions are named per run and read from each resource's "
                         f"{tags.EXECUTION_ARN} tag; only DescribeExecution (read) is allowed"),
        ]
        for resources, reason in reasons:
            for resource in resources:
                acknowledge(self.policy,
                            f"AwsSolutions-IAM5[{wildcard_finding(self, resource)}]", reason)

    def _arns(self, regions: tuple[str, ...], service: str, *resources: str) -> list[str]:
        """This account's `resources` of `service` in each swept region."""
        stack = Stack.of(self)
        return [f"arn:{stack.partition}:{service}:{region}:{stack.account}:{resource}"
                for region in regions for resource in resources]

    def _allow_audit(self, bucket_name: str) -> None:
        """PutObject under watchdog/ only (grant_put would add s3:Abort* and tagging)."""
        audit_objects = f"arn:{Stack.of(self).partition}:s3:::{bucket_name}/{AUDIT_PREFIX}*"
        self.runner.role.add_to_principal_policy(iam.PolicyStatement(
            sid="WriteAudit", actions=["s3:PutObject"], resources=[audit_objects]))
        acknowledge(self.runner.role,
                    f"AwsSolutions-IAM5[{wildcard_finding(self, audit_objects)}]",
                    "each sweep writes a new audit object, watchdog/<date>/<sweep-id>.jsonl; "
                    "only s3:PutObject under watchdog/ is allowed")

    def _alarm_when_failing_or_silent(self, props: WatchdogProps) -> cloudwatch.Alarm:
        """Errors, or no invocation at all (missing data), for two schedule periods: the
        meter is no longer guaranteed to stop."""
        alarm = cloudwatch.Alarm(
            self, "FailingOrSilent",
            alarm_description="benchstack watchdog failed or did not run: billable "
                              "resources may be left running",
            metric=self.function.metric_errors(period=Duration.minutes(
                2 * props.rate.to_minutes()), statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )
        alarm.add_alarm_action(cw_actions.SnsAction(props.alerts.topic))
        return alarm
