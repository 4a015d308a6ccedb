"""BenchmarkStack: one region's benchmark workflow and its runner functions.

Shared by every experiment deployed in the region; an execution's input names the
experiment. Depends on the region's foundation (bucket, topic, VPC).
"""

from __future__ import annotations

from aws_cdk import Duration, Environment, Stack, Tags
from constructs import Construct

from benchstack_constructs import workflow_permissions as allow
from benchstack_constructs.benchmark_workflow import BenchmarkWorkflow
from benchstack_constructs import parameters
from benchstack_constructs.nag_wildcards import acknowledge_wildcards
from benchstack_constructs.network import runner_security_group
from benchstack_constructs.runner_function import RunnerFunction
from runners.experiment import Experiment
from runners.workflow import execution as workflow
from stacks import names
from stacks.foundation import FoundationStack

HANDLER = "runners.workflow.lambda_handler.handler"
# Every phase's own limit is the task's TimeoutSeconds; the function allows the longest.
FUNCTION_TIMEOUT = Duration.seconds(max(workflow.PHASE_TIMEOUT_S.values()) + 30)


class BenchmarkStack(Stack):
    def __init__(self, scope: Construct, region: str, *, foundation: FoundationStack,
                 experiments: list[Experiment], account: str | None = None):
        super().__init__(
            scope, names.benchmark(region),
            env=Environment(account=account, region=region),
            description=f"benchstack benchmark workflow for {region}: state machine, "
                        "runner functions, run notifications",
        )
        self.add_stack_dependency(foundation)
        Tags.of(self).add("benchstack:component", "benchmark")
        # Read at deploy time from the foundation's parameter: no export couples the stacks.
        results_bucket = parameters.value_of(self, workflow.foundation_parameter("results-bucket"))
        cache_bucket = parameters.value_of(self, workflow.foundation_parameter("cache-bucket"))

        self.control = RunnerFunction(
            self, "Control", handler=HANDLER, timeout=FUNCTION_TIMEOUT, memory_mb=1024,
            function_name=workflow.CONTROL_FUNCTION,
            description="benchstack phases outside the VPC: AWS APIs, SageMaker, Bedrock",
            # the code folder is read-only in Lambda; /tmp keeps prices for warm invocations
            environment={"BENCHSTACK_PRICE_CACHE": "/tmp/benchstack-prices.json"})
        for statement in [*allow.sagemaker_endpoints(), *allow.ec2_fleets(),
                          *allow.bedrock_models([e.bedrock.model_id for e in experiments
                                                 if e.bedrock]),
                          *allow.parameters_and_prices(), *allow.start_runs(),
                          *allow.run_telemetry(cache_bucket)]:
            self.control.role.add_to_principal_policy(statement)
        foundation.alerts.grant_publish(self.control.role)

        network = foundation.network
        self.data_security_group = runner_security_group(
            self, "DataSecurityGroup", network=network,
            engine_ports=[e.ec2.engine_port for e in experiments if e.ec2])
        self.data = RunnerFunction(
            self, "Data", handler=HANDLER, timeout=FUNCTION_TIMEOUT, memory_mb=1024,
            function_name=workflow.DATA_FUNCTION, vpc=network.vpc,
            security_group=self.data_security_group,
            description="benchstack phases in the VPC: requests to EC2 engines")
        for fn in (self.control, self.data):
            for statement in allow.results_store(results_bucket):
                fn.role.add_to_principal_policy(statement)

        self.workflow = BenchmarkWorkflow(self, "Workflow", alerts=foundation.alerts,
                                          functions=[self.control.function, self.data.function])
        parameters.publish(
            self, "StateMachineArnParameter", name=workflow.STATE_MACHINE_PARAMETER,
            value=self.workflow.state_machine.state_machine_arn,
            description="benchstack benchmark state machine (python -m runners start)")
        acknowledge_wildcards(self.control.role, (
            "Scoped by prefix and tag, not by name, because a run creates them: results "
            "under runs/, endpoints, their log groups and roles named benchstack-*, engine "
            "telemetry under engines/*/telemetry/, EC2 launches tagged "
            "benchstack:managed (terminate only those), any of the experiment's regions; "
            "its own log streams; EC2 Describe, Pricing and CloudWatch GetMetricData take no "
            "resource scoping."))
        acknowledge_wildcards(self.data.role, (
            "Results under runs/ (keys are made per run), its own log streams, and the ENI "
            "actions Lambda needs to place the function in the VPC (no resource scoping)."))
