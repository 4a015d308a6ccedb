"""FoundationStack: the properties that matter, asserted directly."""

import json

import pytest
from aws_cdk.assertions import Match, Template

from stacks import names
from tests.infra.templates import only, resources

REGION = "us-east-2"


@pytest.fixture(scope="module")
def foundation(templates):
    return templates[names.foundation(REGION)]


def _bucket_with_prefix(template: dict, log_prefix: str | None) -> dict:
    for bucket in resources(template, "AWS::S3::Bucket").values():
        logging = bucket["Properties"].get("LoggingConfiguration", {})
        if logging.get("LogFilePrefix") == log_prefix:
            return bucket["Properties"]
    raise AssertionError(f"no bucket logging with prefix {log_prefix!r}")


def test_every_bucket_is_private_encrypted_and_ssl_only(foundation):
    t = Template.from_json(foundation)
    buckets = resources(foundation, "AWS::S3::Bucket")
    assert len(buckets) == 3  # access logs, results, cache
    for props in (b["Properties"] for b in buckets.values()):
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True,
            "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
        sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert len(resources(foundation, "AWS::S3::BucketPolicy")) == 3
    t.all_resources_properties("AWS::S3::BucketPolicy", {
        "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
            "Effect": "Deny", "Action": "s3:*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})
    for bucket in buckets.values():
        assert bucket["DeletionPolicy"] == "Retain"


def test_results_bucket_is_versioned_and_access_logged(foundation):
    results = _bucket_with_prefix(foundation, "results/")
    assert results["VersioningConfiguration"] == {"Status": "Enabled"}
    rule = results["LifecycleConfiguration"]["Rules"][0]
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}
    assert "ExpirationInDays" not in rule  # results themselves never expire


def test_cache_bucket_expires_objects(foundation):
    cache = _bucket_with_prefix(foundation, "cache/")
    rule = cache["LifecycleConfiguration"]["Rules"][0]
    assert rule["ExpirationInDays"] == 30
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert "VersioningConfiguration" not in cache


def test_alerts_topic_is_encrypted_with_a_rotating_key_and_ssl_only(foundation):
    topic = only(foundation, "AWS::SNS::Topic")["Properties"]
    key_id = topic["KmsMasterKeyId"]["Fn::GetAtt"][0]
    assert foundation["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True
    policy = only(foundation, "AWS::SNS::TopicPolicy")["Properties"]["PolicyDocument"]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport":
                                                                      "false"}}
               for s in policy["Statement"])


def test_vpc_has_a_public_subnet_in_every_az_and_no_nat(templates):
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        template = templates[names.foundation(region)]
        subnets = resources(template, "AWS::EC2::Subnet")
        # Without an account (offline synth) only the two zones every account has:
        # Fn::GetAZs lists only zones with a default subnet, often fewer than six.
        assert sorted(s["Properties"]["AvailabilityZone"]["Fn::Select"][0]
                      for s in subnets.values()) == [0, 1]
        assert all(s["Properties"]["MapPublicIpOnLaunch"] for s in subnets.values())
        assert not resources(template, "AWS::EC2::NatGateway")
        assert not resources(template, "AWS::EC2::EIP")


def test_s3_reaches_the_vpc_through_a_gateway_endpoint(foundation):
    endpoint = only(foundation, "AWS::EC2::VPCEndpoint")["Properties"]
    assert endpoint["VpcEndpointType"] == "Gateway"
    assert "s3" in str(endpoint["ServiceName"])
    assert len(endpoint["RouteTableIds"]) == 2


def test_engine_security_group_admits_nothing_from_the_internet(foundation):
    for group in resources(foundation, "AWS::EC2::SecurityGroup").values():
        assert "SecurityGroupIngress" not in group["Properties"]
    assert not resources(foundation, "AWS::EC2::SecurityGroupIngress")
    assert only(foundation, "AWS::EC2::FlowLog")["Properties"]["LogDestinationType"] == "s3"


def test_later_stacks_find_the_foundation_through_ssm(foundation):
    params = {p["Properties"]["Name"] for p in
              resources(foundation, "AWS::SSM::Parameter").values()}
    assert params == {names.foundation_parameter(k) for k in (
        "results-bucket", "cache-bucket", "alerts-topic-arn", "vpc-id",
        "engine-security-group-id", "public-subnet-ids")}
    assert set(foundation["Outputs"]) >= {"ResultsBucket", "CacheBucket", "AlertsTopicArn"}


def test_deployed_the_vpc_uses_the_accounts_own_zones_from_the_context_lookup(tmp_path):
    """With the account bound (the CDK CLI sets CDK_DEFAULT_ACCOUNT), the zones are what
    DescribeAvailabilityZones answered for this account (CDK context), never indexes
    into Fn::GetAZs that may not exist; at most the region's zone count."""
    from aws_cdk import App

    from stacks.foundation import FoundationStack
    from tests.conftest import cdk_context

    mine = ["us-east-1a", "us-east-1b", "us-east-1d", "us-east-1f"]  # e, c unusable here
    key = "availability-zones:account=123456789012:region=us-east-1"
    app = App(outdir=str(tmp_path), context=cdk_context(**{key: mine}))
    stack = FoundationStack(app, "us-east-1", account="123456789012")
    template = app.synth().get_stack_by_name(stack.stack_name).template
    subnets = resources(template, "AWS::EC2::Subnet")
    assert sorted(s["Properties"]["AvailabilityZone"] for s in subnets.values()) == mine
    assert "Fn::GetAZs" not in json.dumps(template)
