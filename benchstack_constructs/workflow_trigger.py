"""Start a benchmark run when an experiment stack deploys (a CDK trigger): on create, and
again whenever the experiment's definition or the runners' code changes.

A trigger, not an AwsCustomResource calling StartExecution: the run id and the results
location are made at run time by the same Python as `python -m runners start`
(runners/workflow/start.py), so a deploy-started run and a hand-started one get the same input.
"""

from __future__ import annotations

import hashlib

from aws_cdk import Duration, Stack, triggers
from aws_cdk import aws_iam as iam
from constructs import Construct

from benchstack_constructs import cfn_lint
from benchstack_constructs import workflow_permissions as allow
from benchstack_constructs.nag_wildcards import acknowledge_wildcards
from benchstack_constructs.runner_function import RunnerFunction
from runners.workflow import execution as workflow


class RunOnDeploy(Construct):
    """Starts one execution of this region's workflow after `after` is deployed."""

    def __init__(self, scope: Construct, construct_id: str, *, experiment_name: str,
                 definition: str, after: list[Construct]):
        super().__init__(scope, construct_id)
        self.starter = RunnerFunction(
            self, "Starter", handler="runners.workflow.start.trigger_handler",
            timeout=Duration.seconds(60), memory_mb=256,
            description=f"starts a benchstack run of {experiment_name} on deploy",
            environment={
                "BENCHSTACK_EXPERIMENT": experiment_name,
                # A changed experiment changes the function, so the trigger runs again.
                "BENCHSTACK_DEFINITION_SHA256": hashlib.sha256(definition.encode()).hexdigest(),
            })
        region = Stack.of(self).region
        parameters = [workflow.experiment_parameter(experiment_name),
                      workflow.STATE_MACHINE_PARAMETER,
                      workflow.foundation_parameter("results-bucket")]
        for statement in [
            iam.PolicyStatement(actions=["ssm:GetParameter"], resources=[
                allow.arn("ssm", f"parameter{name}", region=region) for name in parameters]),
            *allow.start_runs(region),
        ]:
            self.starter.role.add_to_principal_policy(statement)
        self.trigger = triggers.Trigger(
            self, "Trigger", handler=self.starter.function, execute_after=[*after, self.starter.role],
            # A new run on create, and on every deploy that changes the experiment or the
            # runners' code; a deploy that changes neither starts nothing.
            execute_on_handler_change=True, timeout=Duration.seconds(90))
        acknowledge_wildcards(self.starter.role, (
            "Its own log streams, and DescribeExecution on the executions of the one state "
            "machine it starts (their names are made per run)."))
        # CDK's one provider per stack that runs triggers: the same redundant DependsOn.
        provider = Stack.of(self).node.try_find_child(
            "AWSCDK.TriggerCustomResourceProviderCustomResourceProvider")
        cfn_lint.ignore(provider.node.try_find_child("Handler") if provider else None,
                        cfn_lint.REDUNDANT_ROLE_DEPENDENCY)
