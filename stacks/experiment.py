"""ExperimentStack: one experiment in one region; only the free, durable definitions.

What bills by the hour (the endpoint, the instance) is created by the benchmark workflow,
never by this stack (DESIGN.md: one principle).
"""

from __future__ import annotations

import json

from aws_cdk import Environment, Stack, Tags
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from benchstack_constructs.workflow_trigger import RunOnDeploy
from runners import tags
from runners.experiment import Experiment
from stacks import names
from stacks.benchmark import BenchmarkStack
from stacks.foundation import FoundationStack

STANDARD_PARAMETER_LIMIT = 4096  # characters; above it SSM needs the paid Advanced tier


class ExperimentStack(Stack):
    def __init__(self, scope: Construct, experiment: Experiment, region: str, *,
                 foundation: FoundationStack, benchmark: BenchmarkStack | None = None,
                 start_on_deploy: bool = False, account: str | None = None):
        super().__init__(
            scope, names.experiment(experiment.name, region),
            env=Environment(account=account, region=region),
            description=f"benchstack experiment {experiment.name} ({experiment.backend}) "
                        f"in {region}: {experiment.description}"[:1024],
        )
        self.experiment = experiment
        self.foundation = foundation
        self.add_stack_dependency(foundation)
        Tags.of(self).add("benchstack:component", "experiment")
        Tags.of(self).add(tags.EXPERIMENT, experiment.name)
        snapshot = json.dumps(experiment.to_dict(), sort_keys=True, separators=(",", ":"))
        self.definition = ssm.StringParameter(
            self, "Definition",
            parameter_name=names.experiment_parameter(experiment.name),
            string_value=snapshot,
            tier=(ssm.ParameterTier.STANDARD if len(snapshot) <= STANDARD_PARAMETER_LIMIT
                  else ssm.ParameterTier.ADVANCED),
            description=f"benchstack experiment {experiment.name}: validated definition",
        )
        if benchmark:
            self.add_stack_dependency(benchmark)
        if start_on_deploy:
            if benchmark is None:
                raise ValueError(f"{experiment.name}: starting a run on deploy needs the "
                                 "region's benchmark stack")
            # After the definition it reads; the trigger's own role and policy come first too.
            self.run_on_deploy = RunOnDeploy(self, "RunOnDeploy", experiment_name=experiment.name,
                                             definition=snapshot, after=[self.definition])
