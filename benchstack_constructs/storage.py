"""S3 buckets: server access logs, the results store, and caches for weights and compilers."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from benchstack_constructs.nag import acknowledge


def _secure_bucket(scope: Construct, construct_id: str, *, rule: s3.LifecycleRule,
                   access_logs: s3.IBucket | None = None, log_prefix: str | None = None,
                   versioned: bool = False) -> s3.Bucket:
    """A bucket that is private, encrypted and SSL-only whatever it holds."""
    return s3.Bucket(
        scope, construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
        versioned=versioned,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=log_prefix,
        lifecycle_rules=[rule],
    )


class AccessLogsBucket(Construct):
    """Receives S3 server access logs and VPC flow logs; expires them after `retention_days`."""

    def __init__(self, scope: Construct, construct_id: str, *, retention_days: int = 90):
        super().__init__(scope, construct_id)
        self.bucket = _secure_bucket(
            self, "Bucket", rule=s3.LifecycleRule(expiration=Duration.days(retention_days)))
        acknowledge(self.bucket, "AwsSolutions-S1",
                    "This is the access-log bucket itself; logging it into itself would loop.")


class ResultsBucket(Construct):
    """Durable benchmark results: versioned, access-logged; old versions expire."""

    def __init__(self, scope: Construct, construct_id: str, *, access_logs: s3.IBucket,
                 noncurrent_version_days: int = 90):
        super().__init__(scope, construct_id)
        self.bucket = _secure_bucket(
            self, "Bucket", access_logs=access_logs, log_prefix="results/", versioned=True,
            rule=s3.LifecycleRule(
                noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            ),
        )

    def grant_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Runners add objects under runs/; they never need to delete."""
        return self.bucket.grant_put(grantee, "runs/*")

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.bucket.grant_read(grantee)


class CacheBucket(Construct):
    """Model weights and compilation caches (XLA/JAX, vLLM, Neuron): rebuildable, so they
    expire after `expiry_days` instead of accumulating storage charges."""

    def __init__(self, scope: Construct, construct_id: str, *, access_logs: s3.IBucket,
                 expiry_days: int = 30):
        super().__init__(scope, construct_id)
        self.bucket = _secure_bucket(
            self, "Bucket", access_logs=access_logs, log_prefix="cache/",
            rule=s3.LifecycleRule(
                expiration=Duration.days(expiry_days),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            ),
        )

    def grant_read_write(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.bucket.grant_read_write(grantee)
