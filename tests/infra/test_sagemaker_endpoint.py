"""The SageMaker experiment stack: model, endpoint config with instance pools, execution
role, SSM names for the runners, grants, serve mode, and one-line synth errors."""

import json
import os
import subprocess
import sys

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_iam as iam

from benchstack_constructs import sagemaker_endpoint as construct
from runners import experiment, hardware, tags
from runners.providers.sagemaker import names as sagemaker_names
from stacks import names
from tests.conftest import EXPERIMENTS_DIR, ROOT, cdk_context, synth
from tests.infra.templates import only, resources
from tests.runners.experiments import sagemaker_experiment

SAGEMAKER_EXPERIMENTS = ("e2b-bf16-ml-g6", "e2b-qat-w4a16-ml-g6", "e2b-emb4-ml-g6")
TAG = "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.1"


def _template(templates, name="e2b-emb4-ml-g6", region="us-east-2"):
    return templates[names.experiment(name, region)]


def _variant(template):
    (variant,) = only(template, "AWS::SageMaker::EndpointConfig")["Properties"][
        "ProductionVariants"]
    return variant


def test_endpoint_config_uses_instance_pools_in_priority_order_and_no_instance_type(templates):
    for name in SAGEMAKER_EXPERIMENTS:
        for region in ("us-east-2", "us-east-1", "us-west-2"):
            variant = _variant(_template(templates, name, region))
            assert variant["InstancePools"] == [
                {"InstanceType": "ml.g6.xlarge", "Priority": 1},
                {"InstanceType": "ml.g6.2xlarge", "Priority": 2},
            ]
            assert "InstanceType" not in variant  # SageMaker rejects it beside InstancePools
            assert variant["VariantName"] == sagemaker_names.VARIANT_NAME
            assert variant["InitialInstanceCount"] == 1


def test_variant_timeouts_default_to_1800_s_and_g6_gets_no_volume_size(templates):
    variant = _variant(_template(templates))
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 1800
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    assert variant["ModelDataDownloadTimeoutInSeconds"] == 1800
    assert "VolumeSizeInGB" not in variant  # g6 has local NVMe: SageMaker refuses a size


def test_model_runs_the_regional_vllm_dlc_with_the_sm_vllm_environment(templates):
    for region in ("us-east-2", "us-east-1", "us-west-2"):
        container = only(_template(templates, region=region),
                         "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]
        assert container["Image"] == f"763104351884.dkr.ecr.{region}.amazonaws.com/vllm:{TAG}"
        assert container["Environment"] == {
            "SM_VLLM_MODEL": "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
            "SM_VLLM_SERVED_MODEL_NAME": "gemma-4-e2b",
            "SM_VLLM_MAX_MODEL_LEN": "8192",
            "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.9",
            "SM_VLLM_TENSOR_PARALLEL_SIZE": "1",
            "SM_VLLM_DTYPE": "bfloat16",
            "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "",  # empty value: a bare --flag
            "SM_VLLM_TOOL_CALL_PARSER": "gemma4",
        }


def _policy_statements(template):
    statements = []
    for policy in resources(template, "AWS::IAM::Policy", "Vllm").values():
        statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _rendered(value) -> str:
    return json.dumps(value).replace('{"Ref": "AWS::AccountId"}', "ACCOUNT")


def test_execution_role_has_least_privilege_and_no_managed_policies(templates):
    template = _template(templates)
    role = only(template, "AWS::IAM::Role", "Vllm")["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": "sagemaker.amazonaws.com"}}]
    assert "ManagedPolicyArns" not in role
    assert not resources(template, "AWS::IAM::ManagedPolicy")
    by_action = {}
    for statement in _policy_statements(template):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]
        for action in actions:
            by_action[action] = statement
    assert sorted(by_action) == sorted([
        "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
        "ecr:GetAuthorizationToken", "logs:CreateLogGroup", "logs:CreateLogStream",
        "logs:DescribeLogStreams", "logs:PutLogEvents", "cloudwatch:PutMetricData"])
    assert by_action["ecr:BatchGetImage"]["Resource"] == (
        "arn:aws:ecr:us-east-2:763104351884:repository/vllm")
    log_resources = _rendered(by_action["logs:PutLogEvents"]["Resource"])
    assert "log-group:/aws/sagemaker/Endpoints/bs-e2b-emb4-ml-g6-??????????" in log_resources
    assert "Endpoints/*" not in log_resources
    assert by_action["cloudwatch:PutMetricData"]["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}}
    assert by_action["ecr:GetAuthorizationToken"]["Resource"] == "*"


def test_model_waits_for_the_execution_policy(templates):
    template = _template(templates)
    (policy_id,) = resources(template, "AWS::IAM::Policy", "Vllm")
    assert policy_id in only(template, "AWS::SageMaker::Model")["DependsOn"]


def test_free_resources_carry_component_tags_never_the_watchdog_managed_tag(templates):
    template = _template(templates)
    for type_name in ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig",
                      "AWS::IAM::Role"):
        found = {t["Key"]: t["Value"]
                 for t in only(template, type_name, "Vllm")["Properties"]["Tags"]}
        assert found == {"benchstack:component": "experiment",
                         tags.EXPERIMENT: "e2b-emb4-ml-g6"}
    assert tags.MANAGED not in json.dumps(template)


def test_benchmark_mode_leaves_the_endpoint_to_the_workflow(templates):
    assert not resources(_template(templates), "AWS::SageMaker::Endpoint")
    ec2_stack = templates[names.experiment("e2b-emb4-g6", "us-east-2")]
    assert not resources(ec2_stack, "AWS::SageMaker::EndpointConfig")


def test_runners_find_the_names_in_ssm_and_people_in_outputs(templates):
    template = _template(templates)
    params = {p["Properties"]["Name"]: p["Properties"]["Value"]
              for p in resources(template, "AWS::SSM::Parameter").values()}
    config_id = next(iter(resources(template, "AWS::SageMaker::EndpointConfig")))
    model_id = next(iter(resources(template, "AWS::SageMaker::Model")))
    role_id = next(iter(resources(template, "AWS::IAM::Role", "Vllm")))
    p = lambda key: params[sagemaker_names.parameter("e2b-emb4-ml-g6", key)]  # noqa: E731
    assert p(sagemaker_names.ENDPOINT_CONFIG_NAME) == {
        "Fn::GetAtt": [config_id, "EndpointConfigName"]}
    assert p(sagemaker_names.MODEL_NAME) == {"Fn::GetAtt": [model_id, "ModelName"]}
    assert p(sagemaker_names.EXECUTION_ROLE_ARN) == {"Fn::GetAtt": [role_id, "Arn"]}
    outputs = {o["Description"] for o in template["Outputs"].values()}
    assert outputs == {"endpoint-config-name", "model-name", "execution-role-arn"}


def test_runner_alert_parameter_is_the_one_the_foundation_writes():
    assert sagemaker_names.ALERTS_TOPIC_PARAMETER == names.foundation_parameter("alerts-topic-arn")


# ---------------------------------------------------------------- custom experiments


def _stack(exp, region="us-east-2"):
    app = App(context=cdk_context())
    stack = Stack(app, "T", env=Environment(region=region))
    return app, stack, construct.VllmSageMakerEndpoint(stack, "Vllm", experiment=exp)


def _synth_one(tmp_path, exp, validate=False):
    built, assembly = synth([exp], tmp_path, validate=validate)
    return built, assembly.get_stack_by_name(names.experiment(exp.name, exp.regions[0])).template


def test_serve_mode_adds_a_long_lived_endpoint_named_inside_the_grants(tmp_path):
    exp = sagemaker_experiment(regions=["us-east-2"], sagemaker__mode="serve")
    built, template = _synth_one(tmp_path, exp, validate=True)  # cdk-nag clean with it
    endpoint = only(template, "AWS::SageMaker::Endpoint")["Properties"]
    assert endpoint["EndpointName"] == sagemaker_names.endpoint_name("sm-test", "serve")
    config_id = next(iter(resources(template, "AWS::SageMaker::EndpointConfig")))
    assert endpoint["EndpointConfigName"] == {"Fn::GetAtt": [config_id, "EndpointConfigName"]}
    found = {t["Key"]: t["Value"] for t in endpoint["Tags"]}
    assert found["benchstack:component"] == "serve-endpoint"
    assert tags.MANAGED not in found  # long-lived by choice: the watchdog leaves it
    # the stack hands its runner parameters out, for the workflow to grant_read
    (stack,) = built.experiments
    assert [p.node.default_child.name for p in stack.runner_parameters] == [
        sagemaker_names.parameter("sm-test", key) for key in (
            sagemaker_names.ENDPOINT_CONFIG_NAME, sagemaker_names.MODEL_NAME,
            sagemaker_names.EXECUTION_ROLE_ARN)]


def test_custom_timeouts_and_extra_flags_reach_the_template(tmp_path):
    exp = sagemaker_experiment(
        regions=["us-west-2"],
        sagemaker__timeouts={"model_data_download_s": 900, "variant_instance_provision_s": 600,
                             "container_startup_health_check_s": 1200},
        engine__extra_flags={"max-num-seqs": 16, "enable-prefix-caching": False,
                             "enforce-eager": True, "kv-cache-dtype": "fp8"})
    _, template = _synth_one(tmp_path, exp)
    variant = _variant(template)
    assert (variant["ModelDataDownloadTimeoutInSeconds"],
            variant["VariantInstanceProvisionTimeoutInSeconds"],
            variant["ContainerStartupHealthCheckTimeoutInSeconds"]) == (900, 600, 1200)
    env = only(template, "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"][
        "Environment"]
    assert env["SM_VLLM_MAX_NUM_SEQS"] == "16"
    assert env["SM_VLLM_NO_ENABLE_PREFIX_CACHING"] == ""
    assert env["SM_VLLM_ENFORCE_EAGER"] == ""
    assert env["SM_VLLM_KV_CACHE_DTYPE"] == "fp8"
    assert "SM_VLLM_ENABLE_PREFIX_CACHING" not in env


@pytest.mark.parametrize("changes, field, message", [
    ({"engine__extra_flags": {"max-model-len": 4096}}, "engine.extra_flags.max-model-len",
     "is set by engine.max_model_len; set it there instead"),
    ({"engine__extra_flags": {"port": 9000}}, "engine.extra_flags.port",
     "is set by the container (SageMaker serves on 8080); remove it"),
    ({"sagemaker__instance_pools": [{"instance_type": "ml.inf2.xlarge", "priority": 1}]},
     "sagemaker.instance_pools[0].instance_type",
     "ml.inf2.xlarge has AWS Inferentia2; the AWS vLLM SageMaker container runs on NVIDIA "
     "GPUs only"),
])
def test_what_sagemaker_would_refuse_fails_synth_with_the_field(changes, field, message):
    with pytest.raises(experiment.ExperimentError) as caught:
        _stack(sagemaker_experiment(**changes))
    assert (caught.value.field_path, caught.value.message) == (field, message)


def test_pools_needing_different_dtypes_fail_synth(monkeypatch):
    """No SageMaker GPU type in the catalog is pre-Ampere today; the guard still holds."""
    real = hardware.compute_dtype
    monkeypatch.setattr(hardware, "compute_dtype",
                        lambda t: "float16" if t == "ml.g6.2xlarge" else real(t))
    with pytest.raises(experiment.ExperimentError, match=r"ml.g6.xlarge -> bfloat16, "
                                                         r"ml.g6.2xlarge -> float16"):
        construct.engine_dtype(sagemaker_experiment())


def test_explicit_engine_dtype_is_passed_through():
    assert construct.vllm_environment(
        sagemaker_experiment(engine__dtype="float16"))["SM_VLLM_DTYPE"] == "float16"


def test_a_region_without_a_known_dlc_account_fails_synth():
    exp = sagemaker_experiment()
    with pytest.raises(experiment.ExperimentError, match="'ap-south-1' has no known AWS DLC"):
        _stack(exp, region="ap-south-1")


def test_the_dlc_account_map_covers_every_region_benchstack_knows():
    from runners import regions

    assert set(construct.DLC_REGISTRY_ACCOUNTS) == set(regions.KNOWN)
    assert construct.vllm_image_uri("eu-west-1", "t") == (
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/vllm:t")


def test_a_bad_sagemaker_experiment_is_one_line_from_app_py(tmp_path):
    bad_dir = tmp_path / "experiments"
    bad_dir.mkdir()
    text = (EXPERIMENTS_DIR / "e2b-emb4-ml-g6.toml").read_text()
    # valid for the schema, refused by the construct: the container needs an NVIDIA GPU
    (bad_dir / "e2b-emb4-ml-g6.toml").write_text(text.replace(
        'instance_type = "ml.g6.xlarge"', 'instance_type = "ml.inf2.xlarge"'))
    script = (f"import app; app.EXPERIMENTS_DIR = __import__('pathlib').Path({str(bad_dir)!r});"
              "app.main()")
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "out"),
           "CDK_CONTEXT_JSON": json.dumps(cdk_context()), "CDK_VALIDATION": "false"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith(
        "e2b-emb4-ml-g6.toml: sagemaker.instance_pools[0].instance_type: ml.inf2.xlarge has "
        "AWS Inferentia2; the AWS vLLM SageMaker container runs on NVIDIA GPUs only")


# ---------------------------------------------------------------- grants


def _grant_statements(stack, role):
    template = App.of(stack).synth().get_stack_by_name(stack.stack_name).template
    policy_id = stack.get_logical_id(role.node.find_child("DefaultPolicy").node.default_child)
    return template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]


def test_grants_are_scoped_to_this_config_and_this_experiments_endpoints():
    app, stack, vllm = _stack(sagemaker_experiment())
    role = iam.Role(stack, "Workflow", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    vllm.grant_create_endpoint(role)
    vllm.grant_manage_endpoints(role)
    vllm.grant_invoke(role)
    statements = _grant_statements(stack, role)
    pattern = "endpoint/bs-sm-test-??????????"
    create = next(s for s in statements if s["Action"] == "sagemaker:CreateEndpoint")
    rendered = _rendered(create["Resource"])
    assert pattern in rendered and "EndpointConfigArn" in rendered
    assert create["Condition"] == {"StringEquals": {"aws:RequestTag/benchstack:managed": "true"}}
    for action in ("sagemaker:AddTags", "sagemaker:DescribeEndpoint", "sagemaker:DeleteEndpoint",
                   "sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"):
        statement = next(s for s in statements if action in (
            s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
        assert _rendered(statement["Resource"]).endswith(f'{pattern}"]]}}')
    assert not any("*" == s["Resource"] for s in statements)
