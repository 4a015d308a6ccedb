"""Launch templates of the EC2 experiments, read from the synthesized templates."""

from __future__ import annotations

import base64
import dataclasses
import json

import cfnlint.api
import pytest

from runners import experiment, tags
from runners.providers.ec2.ami import AMI_PARAMETERS
from runners.providers.ec2.user_data import ecr_image
from tests.conftest import EXPERIMENTS_DIR, synth
from tests.infra.templates import resources

EC2 = {e.name: e for e in experiment.load_all(EXPERIMENTS_DIR) if e.backend == "ec2"}
STACKS = [(f"Benchstack-Exp-{name}-{region}", exp) for name, exp in EC2.items()
          for region in exp.regions]


def launch_templates(template: dict) -> dict[str, dict]:
    """Instance type -> LaunchTemplateData."""
    found = resources(template, "AWS::EC2::LaunchTemplate").values()
    return {lt["Properties"]["LaunchTemplateData"]["InstanceType"]: lt["Properties"]
            for lt in found}


def user_data(data: dict) -> str:
    """The boot script with CloudFormation references shown as <Ref>, followed by the
    values file it decodes (the experiment's values travel base64-encoded)."""
    parts = data["UserData"]["Fn::Base64"]["Fn::Join"][1]
    script = "".join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in parts)
    line = next(l for l in script.splitlines() if l.startswith('base64 -d > "$VALUES" <<< '))
    return script + "\n" + base64.b64decode(line.rsplit(" ", 1)[1]).decode()


def parameter_default(template: dict, ref: dict) -> str:
    return template["Parameters"][ref["Ref"]]["Default"]


@pytest.mark.parametrize("stack,exp", STACKS, ids=[s for s, _ in STACKS])
def test_one_hardened_template_per_instance_type(templates, stack, exp):
    template = templates[stack]
    lts = launch_templates(template)
    assert list(lts) == list(exp.ec2.instance_types)
    for itype, props in lts.items():
        data = props["LaunchTemplateData"]
        assert data["MetadataOptions"] == {"HttpEndpoint": "enabled", "HttpTokens": "required",
                                           "HttpPutResponseHopLimit": 1,
                                           "InstanceMetadataTags": "enabled"}
        assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {
            "DeleteOnTermination": True, "Encrypted": True, "VolumeSize": exp.ec2.volume_gb,
            "VolumeType": "gp3"}}]
        assert data["InstanceInitiatedShutdownBehavior"] == "terminate"
        assert parameter_default(template, data["SecurityGroupIds"][0]) == \
            "/benchstack/foundation/engine-security-group-id"
        assert props["LaunchTemplateName"] == f"benchstack-{exp.name}-{itype}"


@pytest.mark.parametrize("stack,exp", STACKS, ids=[s for s, _ in STACKS])
def test_the_ami_comes_from_the_public_parameter_for_the_hardware(templates, stack, exp):
    template = templates[stack]
    for itype, props in launch_templates(template).items():
        path = parameter_default(template, props["LaunchTemplateData"]["ImageId"])
        expected = {"g6": AMI_PARAMETERS[("nvidia", "x86_64")],
                    "g5g": AMI_PARAMETERS[("nvidia", "arm64")],
                    "inf2": AMI_PARAMETERS[("aws-neuron", "x86_64")],
                    "trn1": AMI_PARAMETERS[("aws-neuron", "x86_64")]}[itype.split(".")[0]]
        assert path == expected
        param_type = template["Parameters"][props["LaunchTemplateData"]["ImageId"]["Ref"]]["Type"]
        assert param_type == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"


def test_launched_resources_are_tagged_managed_but_the_template_is_not(templates):
    for stack, exp in STACKS:
        for props in launch_templates(templates[stack]).values():
            specs = props["LaunchTemplateData"]["TagSpecifications"]
            assert {s["ResourceType"] for s in specs} == {"instance", "volume"}
            for spec in specs:
                assert {t["Key"]: t["Value"] for t in spec["Tags"]} == {
                    tags.MANAGED: "true", tags.EXPERIMENT: exp.name}
            own = {t["Key"]: t["Value"] for s in props["TagSpecifications"] for t in s["Tags"]}
            assert tags.MANAGED not in own
            assert own["benchstack:component"] == "experiment"


def test_user_data_carries_the_device_policy(templates):
    g5g = launch_templates(templates["Benchstack-Exp-e2b-fp16-g5g-us-east-1"])
    script = user_data(g5g["g5g.2xlarge"]["LaunchTemplateData"])
    assert "compute_dtype=float16" in script and "--dtype float16" in script
    g6 = launch_templates(templates["Benchstack-Exp-e2b-emb4-g6-us-east-2"])
    script = user_data(g6["g6.xlarge"]["LaunchTemplateData"])
    assert "compute_dtype=bfloat16" in script and "--dtype bfloat16" in script
    for stack in ("Benchstack-Exp-e2b-neuron-inf2-us-east-2",
                  "Benchstack-Exp-e2b-neuron-trn1-us-west-2"):
        for props in launch_templates(templates[stack]).values():
            script = user_data(props["LaunchTemplateData"])
            assert "\nPORT=8080\n" in script and "/dev/neuron*" in script
    # The cache bucket is the foundation's, read from its parameter at deploy time.
    template = templates["Benchstack-Exp-e2b-fp16-g5g-us-east-1"]
    bucket_ref = next(k for k, v in template["Parameters"].items()
                      if v.get("Default") == "/benchstack/foundation/cache-bucket")
    script = user_data(launch_templates(template)["g5g.2xlarge"]["LaunchTemplateData"])
    assert f"printf 'CACHE_BUCKET=%q\\n' '<{bucket_ref}>' >>" in script
    assert "\nCACHE_PREFIX=engines/e2b-fp16-g5g\n" in script


@pytest.mark.parametrize("stack,exp", STACKS, ids=[s for s, _ in STACKS])
def test_the_instance_role_is_least_privilege(templates, stack, exp):
    template = templates[stack]
    roles = resources(template, "AWS::IAM::Role", "Engines")
    assert len(roles) == 1
    role = next(iter(roles.values()))["Properties"]
    assert "ManagedPolicyArns" not in role
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"}
    statements = [s for p in resources(template, "AWS::IAM::Policy", "Engines").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    actions = sorted(a for s in statements for a in (
        s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    assert actions == sorted([
        "ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
        "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel",
        "ssmmessages:OpenDataChannel",
        "s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload",
        "ssm:GetParameter",
        *(["ecr:GetAuthorizationToken", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
           "ecr:BatchCheckLayerAvailability"] if ecr_image(exp.ec2.engine_image) else [])])
    token = next(s for s in statements if s["Action"] == "ssm:GetParameter")
    assert token["Resource"]["Fn::Join"][1][-1].endswith(":parameter/benchstack/hf-token")
    s3_resources = json.dumps([s["Resource"] for s in statements
                               if "s3:" in str(s["Action"])])
    assert f"/engines/{exp.name}/*" in s3_resources
    assert "cachebucket" in s3_resources  # only the foundation's cache bucket parameter
    listing = next(s for s in statements if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"engines/{exp.name}/*"]}}
    profiles = resources(template, "AWS::IAM::InstanceProfile")
    assert len(profiles) == 1


@pytest.mark.parametrize("stack,exp", STACKS, ids=[s for s, _ in STACKS])
def test_runners_find_the_template_ids_in_ssm(templates, stack, exp):
    template = templates[stack]
    params = [p["Properties"] for p in resources(template, "AWS::SSM::Parameter").values()
              if p["Properties"]["Name"] == f"/benchstack/ec2/{exp.name}/launch-templates"]
    assert len(params) == 1
    assert len(template["Outputs"]) == len(exp.ec2.instance_types)


def test_other_backends_get_no_launch_template(templates):
    for name, template in templates.items():
        if name.startswith("Benchstack-Exp-") and not any(name == s for s, _ in STACKS):
            assert not resources(template, "AWS::EC2::LaunchTemplate"), name


def test_an_ecr_engine_image_gets_pull_rights_on_its_repository_only(tmp_path):
    """A private image (the sm_75 vLLM build for g5g lives in ECR) needs a docker login."""
    exp = EC2["e2b-fp16-g5g"]
    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-sm75:0.27.2rc0"
    exp = dataclasses.replace(exp, regions=("us-east-1",),
                              ec2=dataclasses.replace(exp.ec2, engine_image=image))
    _, assembly = synth([exp], tmp_path, validate=True)  # cdk-nag must stay clean
    template = assembly.get_stack_by_name("Benchstack-Exp-e2b-fp16-g5g-us-east-1").template
    statements = [s for p in resources(template, "AWS::IAM::Policy", "Engines").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    pull = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    assert pull["Resource"] == ("arn:aws:ecr:us-west-2:123456789012:repository/vllm-sm75")
    login = next(s for s in statements if s["Action"] == "ecr:GetAuthorizationToken")
    assert login["Resource"] == "*"
    script = user_data(launch_templates(template)["g5g.2xlarge"]["LaunchTemplateData"])
    assert "ECR_REGISTRY=123456789012.dkr.ecr.us-west-2.amazonaws.com" in script
    assert "ECR_REGION=us-west-2" in script
    assert list(cfnlint.api.lint(json.dumps(template), regions=["us-east-1"])) == []


def test_a_public_engine_image_gets_no_ecr_rights(templates):
    public = [stack for stack, exp in STACKS if not ecr_image(exp.ec2.engine_image)]
    assert public
    for stack in public:
        text = json.dumps(templates[stack]["Resources"])
        assert "ecr:" not in text, stack
