"""Launch templates for engine instances (vLLM on NVIDIA GPUs, the Neuron engine on
Inferentia2/Trainium): the free, durable half of an EC2 experiment. The benchmark workflow
launches from them with CreateFleet and terminates what it launched (DESIGN.md)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from runners.providers.ec2.user_data import (
    HF_TOKEN_PARAMETER, EcrImage, EngineLaunch, ecr_image, render)
from benchstack_constructs.nag import acknowledge
from runners import tags
from runners.providers.ec2.ami import ami_parameter
from runners.experiment import Experiment

ROOT_DEVICE = "/dev/xvda"  # the AL2023 DLAMIs' root device
# One hop: the host reaches IMDS (it reads its tags and the role's credentials for the S3
# cache), a container behind Docker's bridge does not: the engine image never holds the
# instance role.
IMDS_HOP_LIMIT = 1




def _nag_text(scope: Construct, value: str) -> str:
    """`value` as cdk-nag names it in a finding id: references become <LogicalId>."""
    resolved = Stack.of(scope).resolve(value)
    if isinstance(resolved, str):
        return resolved
    parts = resolved["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in parts)


def template_name(experiment: str, instance_type: str) -> str:
    return f"benchstack-{experiment}-{instance_type}"


class EngineInstanceRole(Construct):
    """The instances' role: Session Manager for people, read/write on the experiment's
    prefix of the cache bucket, the Hugging Face token parameter, and pulls from the engine
    image's ECR repository when there is one. Nothing else: no delete, no other bucket."""

    def __init__(self, scope: Construct, construct_id: str, *, cache_bucket_name: str,
                 cache_prefix: str, ecr: EcrImage | None = None):
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self, "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"benchstack engine instances: Session Manager and cache {cache_prefix}",
        )
        self.instance_profile = iam.InstanceProfile(self, "InstanceProfile", role=self.role)
        # What AmazonSSMManagedInstanceCore grants for Session Manager, minus Run Command,
        # Inventory and parameter reads, which these instances never use.
        session_manager = iam.Policy(self, "SessionManager", roles=[self.role], statements=[
            iam.PolicyStatement(
                actions=["ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
                         "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel",
                         "ssmmessages:OpenDataChannel"],
                resources=["*"],
            )
        ])
        acknowledge(session_manager, "AwsSolutions-IAM5[Resource::*]",
                    "Session Manager's agent actions (ssmmessages:*Channel, "
                    "ssm:UpdateInstanceInformation) have no resource-level permissions for "
                    "an instance that does not exist yet; the resource must be '*'.")
        bucket_arn = Stack.of(self).format_arn(service="s3", region="", account="",
                                               resource=cache_bucket_name)
        objects_arn = f"{bucket_arn}/{cache_prefix}/*"
        cache = iam.Policy(self, "Cache", roles=[self.role], statements=[
            iam.PolicyStatement(
                actions=["s3:ListBucket"], resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{cache_prefix}/*"]}},
            ),
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[objects_arn],
            ),
        ])
        acknowledge(cache, f"AwsSolutions-IAM5[Resource::{_nag_text(self, objects_arn)}]",
                    "The cache holds model files and compiler output whose keys are not known "
                    "in advance; access is limited to this experiment's prefix of the cache "
                    "bucket, without delete.")
        stack = Stack.of(self)
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["ssm:GetParameter"],
            resources=[stack.format_arn(service="ssm", resource="parameter",
                                        resource_name=HF_TOKEN_PARAMETER.lstrip("/"))],
        ))
        if ecr:
            self._ecr_pull(ecr)

    def _ecr_pull(self, ecr: EcrImage) -> None:
        stack = Stack.of(self)
        login = iam.Policy(self, "EcrLogin", roles=[self.role], statements=[
            iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"])])
        acknowledge(login, "AwsSolutions-IAM5[Resource::*]",
                    "ecr:GetAuthorizationToken is account-wide and takes no resource; pulls "
                    "are limited to the engine image's repository by the statement beside it.")
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                     "ecr:BatchCheckLayerAvailability"],
            resources=[stack.format_arn(service="ecr", region=ecr.region, account=ecr.account,
                                        resource="repository", resource_name=ecr.repository)],
        ))


class EngineLaunchTemplate(Construct):
    """One instance type's launch template for an experiment."""

    def __init__(self, scope: Construct, construct_id: str, *, launch: EngineLaunch,
                 instance_profile: iam.IInstanceProfile,
                 security_group: ec2.ISecurityGroup):
        super().__init__(scope, construct_id)
        exp = launch.experiment
        self.launch_template = ec2.LaunchTemplate(
            self, "Template",
            launch_template_name=template_name(exp.name, launch.instance_type),
            version_description=f"{exp.name} on {launch.instance_type}: "
                                f"{exp.ec2.engine_image}, {launch.compute_dtype}",
            instance_type=ec2.InstanceType(launch.instance_type),
            machine_image=ec2.MachineImage.from_ssm_parameter(
                ami_parameter(launch.instance_type), os=ec2.OperatingSystemType.LINUX),
            user_data=ec2.UserData.custom(render(launch)),
            instance_profile=instance_profile,
            security_group=security_group,
            block_devices=[ec2.BlockDevice(
                device_name=ROOT_DEVICE,
                volume=ec2.BlockDeviceVolume.ebs(
                    exp.ec2.volume_gb, encrypted=True, delete_on_termination=True,
                    volume_type=ec2.EbsDeviceVolumeType.GP3),
            )],
            http_endpoint=True,
            http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
            http_put_response_hop_limit=IMDS_HOP_LIMIT,
            instance_metadata_tags=True,  # user data reads benchstack:expires-at from IMDS
            instance_initiated_shutdown_behavior=ec2.InstanceInitiatedShutdownBehavior.TERMINATE,
        )
        # Instances and volumes are billable: they carry benchstack:managed so the watchdog
        # finds them (the fleet request adds run-id and expires-at). The template itself is
        # free and keeps only the stack's component/experiment tags.
        launched_tags = [{"Key": tags.MANAGED, "Value": "true"},
                         {"Key": tags.EXPERIMENT, "Value": exp.name}]
        cfn = self.launch_template.node.default_child
        cfn.add_property_override("LaunchTemplateData.TagSpecifications", [
            {"ResourceType": kind, "Tags": launched_tags} for kind in ("instance", "volume")
        ])

    @property
    def launch_template_id(self) -> str:
        return self.launch_template.launch_template_id


class EngineLaunchTemplates(Construct):
    """Every launch template an EC2 experiment places on, sharing one instance role."""

    def __init__(self, scope: Construct, construct_id: str, *, experiment: Experiment,
                 cache_bucket_name: str, security_group: ec2.ISecurityGroup):
        super().__init__(scope, construct_id)
        if experiment.ec2 is None:
            raise ValueError(f"{experiment.name}: not an ec2 experiment")
        launches = [EngineLaunch(experiment, itype, cache_bucket_name)
                    for itype in experiment.ec2.instance_types]
        self.role = EngineInstanceRole(self, "InstanceRole", cache_bucket_name=cache_bucket_name,
                                       cache_prefix=launches[0].cache_prefix,
                                       ecr=ecr_image(experiment.ec2.engine_image))
        self.templates: dict[str, EngineLaunchTemplate] = {
            launch.instance_type: EngineLaunchTemplate(
                self, launch.instance_type.replace(".", ""), launch=launch,
                instance_profile=self.role.instance_profile, security_group=security_group)
            for launch in launches
        }

    @property
    def template_ids(self) -> dict[str, str]:
        """Instance type -> launch template id, in the experiment's priority order."""
        return {itype: t.launch_template_id for itype, t in self.templates.items()}
