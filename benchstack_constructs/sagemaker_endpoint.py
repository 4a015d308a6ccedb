"""A vLLM model and endpoint config for SageMaker, with instance pools.

CloudFormation owns the free, durable part: the model (AWS vLLM container + SM_VLLM_*
environment), the endpoint config (one production variant over up to five instance pools)
and the execution role. The endpoint itself bills by the hour, so the benchmark workflow
creates and deletes it; only the opt-in "serve" mode puts a long-lived endpoint in the stack.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from benchstack_constructs.nag import acknowledge
from runners import hardware, tags
from runners.experiment import Experiment, ExperimentError
from runners.providers.sagemaker import names
from runners.providers.sagemaker.names import (  # noqa: F401 - re-exported
    DLC_REGISTRY_ACCOUNTS, DLC_REPOSITORY, vllm_image_uri)

ENV_PREFIX = "SM_VLLM_"
MAX_ENVIRONMENT_ENTRIES = 100  # CreateModel: EnvironmentMap max 100


def _flag_env(flag: str) -> str:
    """vLLM flag name ("max-num-seqs") -> container variable ("SM_VLLM_MAX_NUM_SEQS")."""
    return ENV_PREFIX + flag.upper().replace("-", "_")


def engine_dtype(experiment: Experiment) -> str:
    """The one compute dtype for every pool; pools that would need different ones fail."""
    by_type = {itype: experiment.compute_dtype(itype) for itype in experiment.instance_types}
    dtypes = sorted(set(by_type.values()))
    if len(dtypes) > 1:
        detail = ", ".join(f"{itype} -> {dtype}" for itype, dtype in by_type.items())
        raise ExperimentError(experiment.source, "sagemaker.instance_pools",
                              f"pools need different compute dtypes ({detail}); one model "
                              "serves every pool, so use pools that agree")
    return dtypes[0]


def vllm_environment(experiment: Experiment) -> dict[str, str]:
    """The SM_VLLM_* variables. The container turns each SM_VLLM_<NAME>=<value> into
    `--<name> <value>` for `vllm serve`, and an empty value into a bare `--<name>`."""
    engine = experiment.engine
    env = {
        "SM_VLLM_MODEL": experiment.model.id,
        "SM_VLLM_SERVED_MODEL_NAME": experiment.model.served_name,
        "SM_VLLM_MAX_MODEL_LEN": str(engine.max_model_len),
        "SM_VLLM_GPU_MEMORY_UTILIZATION": str(engine.gpu_memory_utilization),
        "SM_VLLM_TENSOR_PARALLEL_SIZE": str(engine.tensor_parallel_size),
        "SM_VLLM_DTYPE": engine_dtype(experiment),
    }
    if experiment.model.gated:
        # Resolved by CloudFormation at deploy (never in the template); the container's
        # huggingface_hub reads HF_TOKEN. DescribeModel shows the value to whoever may call
        # it in this account: the price of a container that reads no secret store itself.
        env["HF_TOKEN"] = (f"{{{{resolve:secretsmanager:{names.HF_TOKEN_SECRET}"
                           ":SecretString}}")
    if engine.tool_call_parser:
        env["SM_VLLM_ENABLE_AUTO_TOOL_CHOICE"] = ""
        env["SM_VLLM_TOOL_CALL_PARSER"] = engine.tool_call_parser
    owned = {_flag_env(flag): f"is set by {field}; set it there instead" for flag, field in (
        ("model", "model.id"), ("served-model-name", "model.served_name"),
        ("max-model-len", "engine.max_model_len"),
        ("gpu-memory-utilization", "engine.gpu_memory_utilization"),
        ("tensor-parallel-size", "engine.tensor_parallel_size"), ("dtype", "engine.dtype"),
        ("enable-auto-tool-choice", "engine.tool_call_parser"),
        ("tool-call-parser", "engine.tool_call_parser"))}
    owned[_flag_env("port")] = "is set by the container (SageMaker serves on 8080); remove it"
    for flag, value in engine.extra_flags.items():
        key = _flag_env(flag)
        if key in owned:
            raise ExperimentError(experiment.source, f"engine.extra_flags.{flag}", owned[key])
        if value is True:
            env[key] = ""
        elif value is False:
            # vLLM's boolean engine flags take --no-<flag>; a store-true flag rejects it
            # loudly at start-up, which beats silently dropping the user's `false`.
            env[_flag_env(f"no-{flag}")] = ""
        else:
            env[key] = str(value)
    if len(env) > MAX_ENVIRONMENT_ENTRIES:
        raise ExperimentError(experiment.source, "engine.extra_flags",
                              f"{len(env)} container variables; SageMaker allows "
                              f"{MAX_ENVIRONMENT_ENTRIES}")
    return env


def _check_pools(experiment: Experiment, region: str) -> None:
    if region not in DLC_REGISTRY_ACCOUNTS:
        raise ExperimentError(experiment.source, "regions",
                              f"{region!r} has no known AWS DLC registry account; allowed: "
                              f"{', '.join(DLC_REGISTRY_ACCOUNTS)}")
    for i, pool in enumerate(experiment.sagemaker.instance_pools):
        accel = hardware.lookup(pool.instance_type).accelerator
        if accel.vendor != "nvidia":
            raise ExperimentError(
                experiment.source, f"sagemaker.instance_pools[{i}].instance_type",
                f"{pool.instance_type} has {accel.name}; the AWS vLLM SageMaker container "
                "runs on NVIDIA GPUs only")


class VllmSageMakerEndpoint(Construct):
    """Model + endpoint config (+ endpoint in "serve" mode) for one experiment in the
    stack's region.

    Attributes: `role` (execution role) and its `execution_policy`, `model`,
    `endpoint_config`, `endpoint` (None unless serve mode), `image_uri`, `environment`.
    """

    def __init__(self, scope: Construct, construct_id: str, *, experiment: Experiment):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        region = stack.region
        sm = experiment.sagemaker
        if sm is None or experiment.engine is None:
            raise ValueError(f"{experiment.name}: backend {experiment.backend!r} has no "
                             "[sagemaker] section")
        _check_pools(experiment, region)
        self.experiment = experiment
        self.image_uri = vllm_image_uri(region, sm.image_tag)
        self.environment = vllm_environment(experiment)
        self._endpoint_arn_pattern = stack.format_arn(
            service="sagemaker", resource="endpoint",
            resource_name=names.endpoint_name_pattern(experiment.name))

        self.role, self.execution_policy = self._execution_role(stack, region, experiment.name)
        self.model = sagemaker.CfnModel(
            self, "Model",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=self.image_uri, environment=self.environment),
        )
        # CreateModel and the first image pull need the policy, not only the role.
        self.model.node.add_dependency(self.execution_policy)
        timeouts = sm.timeouts
        # InstancePools replace the variant's InstanceType; SageMaker rejects both together.
        variant = sagemaker.CfnEndpointConfig.ProductionVariantProperty(
            variant_name=names.VARIANT_NAME,
            model_name=self.model.attr_model_name,
            initial_instance_count=1,
            initial_variant_weight=1.0,
            instance_pools=[
                sagemaker.CfnEndpointConfig.InstancePoolProperty(
                    instance_type=pool.instance_type, priority=pool.priority)
                for pool in sorted(sm.instance_pools, key=lambda p: p.priority)
            ],
            variant_instance_provision_timeout_in_seconds=timeouts.variant_instance_provision_s,
            container_startup_health_check_timeout_in_seconds=(
                timeouts.container_startup_health_check_s),
            model_data_download_timeout_in_seconds=timeouts.model_data_download_s,
            # The schema refuses a volume size for types with local NVMe (g5, g6, g6e...).
            volume_size_in_gb=sm.volume_size_gb,
        )
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self, "EndpointConfig", production_variants=[variant])

        self.endpoint = None
        if sm.mode == "serve":
            # Long-lived by the user's choice: no benchstack:managed tag, so the watchdog
            # leaves it alone; `cdk destroy` of the stack deletes it.
            self.endpoint = sagemaker.CfnEndpoint(
                self, "Endpoint",
                endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
                endpoint_name=names.endpoint_name(experiment.name, "serve"),
            )
            Tags.of(self.endpoint).add("benchstack:component", "serve-endpoint")

    def _execution_role(self, stack: Stack, region: str,
                        experiment: str) -> tuple[iam.Role, iam.Policy]:
        """What the container needs and nothing more: pull the vLLM image, write its own
        endpoint's logs and metrics. Weights come from the Hugging Face Hub, not S3."""
        role = iam.Role(
            self, "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"benchstack {experiment}: SageMaker vLLM model execution role",
        )
        repository_arn = stack.format_arn(
            service="ecr", account=DLC_REGISTRY_ACCOUNTS[region], resource="repository",
            resource_name=DLC_REPOSITORY)
        log_group = names.log_group(names.endpoint_name_pattern(experiment))
        log_group_arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=log_group,
            arn_format=ArnFormat.COLON_RESOURCE_NAME)
        policy = iam.Policy(self, "ExecutionPolicy", roles=[role], statements=[
            iam.PolicyStatement(
                actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage",
                         "ecr:GetDownloadUrlForLayer"],
                resources=[repository_arn]),
            iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            iam.PolicyStatement(
                actions=["logs:CreateLogGroup", "logs:CreateLogStream",
                         "logs:DescribeLogStreams", "logs:PutLogEvents"],
                resources=[log_group_arn, f"{log_group_arn}:log-stream:*"]),
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"], resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": names.LOG_GROUP_ROOT}}),
        ])
        acknowledge(policy, "AwsSolutions-IAM5[Resource::*]",
                    "ecr:GetAuthorizationToken and cloudwatch:PutMetricData have no resource "
                    "types; PutMetricData is limited to the SageMaker endpoint namespace.")
        # cdk-nag names the finding by the rendered ARN (account as <AWS::AccountId>).
        stream_finding = (f"arn:{stack.partition}:logs:{region}:<AWS::AccountId>:log-group:"
                          f"{log_group}:log-stream:*")
        acknowledge(policy, f"AwsSolutions-IAM5[Resource::{stream_finding}]",
                    "SageMaker names log streams at run time; they are limited to this "
                    "experiment's endpoint log groups.")
        return role, policy

    # ------------------------------------------------------------------ grants

    def grant_create_endpoint(self, grantee: iam.IGrantable) -> iam.Grant:
        """Create this experiment's endpoints from this config, only with the
        `benchstack:managed` tag on the request, so the watchdog can always find them."""
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=["sagemaker:CreateEndpoint"],
            resource_arns=[self.endpoint_config.attr_endpoint_config_arn,
                           self._endpoint_arn_pattern],
            conditions={"StringEquals": {f"aws:RequestTag/{tags.MANAGED}": "true"}})
        # Tag-on-create is authorized as AddTags on the new endpoint.
        iam.Grant.add_to_principal(grantee=grantee, actions=["sagemaker:AddTags"],
                                   resource_arns=[self._endpoint_arn_pattern])
        return grant

    def grant_manage_endpoints(self, grantee: iam.IGrantable) -> iam.Grant:
        """Watch and delete this experiment's endpoints (await_ready and teardown)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["sagemaker:DescribeEndpoint", "sagemaker:DeleteEndpoint"],
            resource_arns=[self._endpoint_arn_pattern])

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Send benchmark requests to this experiment's endpoints."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            resource_arns=[self._endpoint_arn_pattern])
