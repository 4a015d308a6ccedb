"""ExperimentStack: one experiment in one region; only the free, durable definitions.

What bills by the hour (the endpoint, the instance) is created by the benchmark workflow,
never by this stack (DESIGN.md: one principle).
"""

from __future__ import annotations

import json

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from benchstack_constructs.launch_template import EngineLaunchTemplates
from benchstack_constructs.sagemaker_endpoint import VllmSageMakerEndpoint
from benchstack_constructs.workflow_trigger import RunOnDeploy
from runners import sagemaker_names, tags
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
        self.sagemaker = None
        self.runner_parameters: list[ssm.StringParameter] = []  # grant_read them to runners
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
            return ssm.StringParameter.value_for_string_parameter(
                self, names.foundation_parameter(key))

        self.engines = EngineLaunchTemplates(
            self, "Engines", experiment=experiment,
            cache_bucket_name=foundation_value("cache-bucket"),
            security_group=ec2.SecurityGroup.from_security_group_id(
                self, "EngineSecurityGroup", foundation_value("engine-security-group-id"),
                mutable=False),
        )
        ids = self.engines.template_ids
        ssm.StringParameter(
            self, "LaunchTemplateIds",
            parameter_name=names.ec2_launch_templates_parameter(experiment.name),
            string_value=self.to_json_string(ids),
            description=f"benchstack {experiment.name}: launch template id per instance type",
        )
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
        for key, value in values.items():
            construct_id = "".join(part.title() for part in key.split("-"))
            self.runner_parameters.append(ssm.StringParameter(
                self, f"{construct_id}Parameter",
                parameter_name=sagemaker_names.parameter(name, key),
                string_value=value,
                description=f"benchstack experiment {name}: SageMaker {key}",
            ))
            CfnOutput(self, construct_id, value=value, description=key)
