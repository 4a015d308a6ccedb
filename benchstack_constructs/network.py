"""The benchmark network: public subnets in every AZ, no NAT, S3 through a gateway."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from constructs import Construct

from benchstack_constructs import cfn_lint


def zones(stack: Stack, az_count: int) -> list[str]:
    """The AZs to put subnets in, at most `az_count`.

    Deployed (the CDK CLI binds the account: app.py passes CDK_DEFAULT_ACCOUNT), these are
    the account's own available zones, from CDK's availability-zones context lookup
    (DescribeAvailabilityZones, kept in cdk.context.json). Indexing Fn::GetAZs instead
    fails the deploy wherever the account sees fewer zones: it returns only the zones
    with a default subnet when a default VPC exists (CloudFormation User Guide,
    Fn::GetAZs), and many us-east-1 accounts see five or fewer. Without an account
    (offline synth, the tests) CDK's answer is the first two of Fn::GetAZs, which every
    account has."""
    return stack.availability_zones[:az_count]


class BenchmarkNetwork(Construct):
    """A VPC for GPU and Neuron instances.

    Public subnets in every AZ so a capacity-driven fleet can try every zone; no NAT
    gateway (it bills by the hour whether or not a benchmark runs); S3 through a free
    gateway endpoint; an engine security group that admits nothing from the internet.
    """

    def __init__(self, scope: Construct, construct_id: str, *,
                 az_count: int, flow_logs_bucket: s3.IBucket,
                 cidr: str = "10.42.0.0/16"):
        super().__init__(scope, construct_id)
        self.vpc = ec2.Vpc(
            self, "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            availability_zones=zones(Stack.of(self), az_count),
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC,
                                        cidr_mask=20)
            ],
            restrict_default_security_group=True,
            flow_logs={
                "s3": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_s3(flow_logs_bucket, "vpc-flow-logs/"),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        self._quiet_cdk_provider_lint()
        self.engine_security_group = ec2.SecurityGroup(
            self, "EngineSecurityGroup",
            vpc=self.vpc,
            description="benchstack engines: no inbound from the internet",
            allow_all_outbound=True,
        )

    def _quiet_cdk_provider_lint(self) -> None:
        """CDK's own provider for restrictDefaultSecurityGroup lists its role in DependsOn
        and also reads it by GetAtt; cfn-lint warns (W3005). Harmless, and not our code."""
        provider = Stack.of(self).node.try_find_child(
            "Custom::VpcRestrictDefaultSGCustomResourceProvider")
        if provider:
            cfn_lint.ignore(provider.node.try_find_child("Handler"),
                            cfn_lint.REDUNDANT_ROLE_DEPENDENCY)

    @property
    def public_subnet_ids(self) -> list[str]:
        return [subnet.subnet_id for subnet in self.vpc.public_subnets]


def runner_security_group(scope: Construct, construct_id: str, *, network: BenchmarkNetwork,
                          engine_ports: list[int]) -> ec2.SecurityGroup:
    """The in-VPC runner's security group, and an engine ingress rule from it per port."""
    group = ec2.SecurityGroup(
        scope, construct_id, vpc=network.vpc,
        description="benchstack in-VPC runner: calls engines and S3; admits nothing",
        # No NAT and no public IP: outbound reaches only the VPC and the S3 gateway.
        allow_all_outbound=True)
    for port in sorted(set(engine_ports)):
        ec2.CfnSecurityGroupIngress(
            scope, f"EngineFromRunner{port}",
            group_id=network.engine_security_group.security_group_id,
            source_security_group_id=group.security_group_id,
            ip_protocol="tcp", from_port=port, to_port=port,
            description="benchstack in-VPC runner to the engine port")
    return group


def imported_security_group(scope: Construct, construct_id: str,
                            security_group_id: str) -> ec2.ISecurityGroup:
    """A security group another stack owns, by id (left as it is: mutable=False)."""
    return ec2.SecurityGroup.from_security_group_id(scope, construct_id, security_group_id,
                                                    mutable=False)
