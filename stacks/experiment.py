"""ExperimentStack: one experiment in one region; only the free, durable definitions.

What bills by the hour (the endpoint, the instance) is created by the benchmark workflow,
never by this stack (DESIGN.md: one principle).
"""

from __future__ import annotations

import json

from aws_cdk import CfnOutput, Environment, Stack, Tags
from constructs import Construct

from benchstack_constructs import parameters
from benchstack_constructs.launch_template import EngineLaunchTemplates
from benchstack_constructs.network import imported_security_group
from benchstack_constructs.sagemaker_endpoint import VllmSageMakerEndpoint
from benchstack_constructs.workflow_trigger import RunOnDeploy
from runners import tags
from runners.experiment import Experiment
from runners.providers.sagemaker import names as sagemaker_names
from stacks import names
from stacks.benchmark import BenchmarkStack
from stacks.foundation import FoundationStack



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
        self.definition = parameters.publish(
            self, "Definition", name=names.experiment_parameter(experiment.name),
            value=snapshot,
            description=f"benchstack experiment {experiment.name}: validated definition")
        self.sagemaker = None
        self.runner_parameters = []  # SSM parameters; grant_read them to runners
        if experiment.backend == "sagemaker":
            self.sagemaker = VllmSageMakerEndpoint(self, "Vllm", experiment=experiment)
            self._publish_sagemaker_names(experiment.name)
        if experiment.backend == "ec2":
            self._ec2_engines(experiment)
        if benchmark:
            self.add_stack_dependency(benchmark)
        if start_on_deploy:
            if benchmark is None:
                raise ValueError(f"{experiment.name}: starting a run on deploy needs the "
                                 "region's benchmark stack")
            # After the definition it reads; the trigger's own role and policy come first too.
            self.run_on_deploy = RunOnDeploy(self, "RunOnDeploy", experiment_name=experiment.name,
                                             definition=snapshot, after=[self.definition])

    def _ec2_engines(self, experiment: Experiment) -> None:
        """Launch templates per instance type; runners find them through SSM.

        The foundation's cache bucket and security group are read from its SSM parameters
        at deploy time, not imported: cross-stack exports would pin the foundation."""
        def foundation_value(key: str) -> str:
            return parameters.value_of(self, names.foundation_parameter(key))

        self.engines = EngineLaunchTemplates(
            self, "Engines", experiment=experiment,
            cache_bucket_name=foundation_value("cache-bucket"),
            security_group=imported_security_group(
                self, "EngineSecurityGroup", foundation_value("engine-security-group-id")),
        )
        ids = self.engines.template_ids
        parameters.publish(
            self, "LaunchTemplateIds",
            name=names.ec2_launch_templates_parameter(experiment.name),
            value=self.to_json_string(ids),
            description=f"benchstack {experiment.name}: launch template id per instance type")
        for itype, template_id in ids.items():
            CfnOutput(self, f"LaunchTemplate{itype.replace('.', '')}", value=template_id,
                      description=f"launch template for {itype}")

    def _publish_sagemaker_names(self, name: str) -> None:
        """SSM parameters the runners read in this region; stack outputs for people."""
        values = {
            sagemaker_names.ENDPOINT_CONFIG_NAME:
                self.sagemaker.endpoint_config.attr_endpoint_config_name,
            sagemaker_names.MODEL_NAME: self.sagemaker.model.attr_model_name,
            sagemaker_names.EXECUTION_ROLE_ARN: self.sagemaker.role.role_arn,
        }
        self.runner_parameters += parameters.publish_with_outputs(
            self, values, name_of=lambda key: sagemaker_names.parameter(name, key),
            description_of=lambda key: f"benchstack experiment {name}: SageMaker {key}")
