"""Names the SageMaker experiment stack and the runners agree on.

The stack (CDK) and the runners (boto3, in Lambda) both import this module, so an endpoint
the workflow creates always falls under the IAM grants and log-group permissions the stack
wrote for it. CloudFormation names the model and the endpoint config itself (a fixed name
would block any replacement); the stack publishes those names in SSM under `parameter()`.
"""

from __future__ import annotations

import hashlib

ENDPOINT_PREFIX = "bs"
VARIANT_NAME = "AllTraffic"
MAX_NAME_LEN = 63  # SageMaker: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}
LOG_GROUP_ROOT = "/aws/sagemaker/Endpoints"
RUN_DIGEST_LEN = 10  # hex characters of sha256(run id) in an endpoint name

# SSM keys under /benchstack/sagemaker/<experiment>/ (one set per region: SSM is regional)
ENDPOINT_CONFIG_NAME = "endpoint-config-name"
MODEL_NAME = "model-name"
EXECUTION_ROLE_ARN = "execution-role-arn"
# Written by the foundation stack (stacks/names.py foundation_parameter("alerts-topic-arn")).
ALERTS_TOPIC_PARAMETER = "/benchstack/foundation/alerts-topic-arn"
# The Hugging Face token of a gated model (experiment model.gated), a Secrets Manager
# secret: CreateModel's Environment takes only plain strings, and CloudFormation resolves
# a secretsmanager dynamic reference in any property (ssm-secure only in a few).
HF_TOKEN_SECRET = "benchstack/hf-token"


def endpoint_name(experiment: str, run_id: str) -> str:
    """The endpoint for one run: the experiment name, then a fixed-length digest of the run
    id (run ids are too long to fit SageMaker's 63 characters beside a 40-character name)."""
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:RUN_DIGEST_LEN]
    name = f"{ENDPOINT_PREFIX}-{experiment}-{digest}"
    if len(name) > MAX_NAME_LEN:
        raise ValueError(f"endpoint name {name!r} is longer than {MAX_NAME_LEN} characters")
    return name


def endpoint_name_pattern(experiment: str) -> str:
    """An IAM/ARN wildcard matching exactly `experiment`'s endpoint names.

    One `?` per digest character, not `*`: a prefix wildcard for experiment "e2b" would also
    match experiment "e2b-bf16"'s endpoints; a fixed-length pattern cannot.
    """
    return f"{ENDPOINT_PREFIX}-{experiment}-{'?' * RUN_DIGEST_LEN}"


def log_group(endpoint: str) -> str:
    return f"{LOG_GROUP_ROOT}/{endpoint}"


def parameter(experiment: str, key: str) -> str:
    """SSM parameter the experiment stack writes and the runners read."""
    return f"/benchstack/sagemaker/{experiment}/{key}"


# AWS Deep Learning Containers registry account per region, for every region benchstack
# knows (runners/regions.py). Source: aws/deep-learning-containers,
# docs/reference/region_availability.md ("Private ECR account IDs by region").
DLC_REGISTRY_ACCOUNTS: dict[str, str] = {
    "us-east-1": "763104351884",
    "us-east-2": "763104351884",
    "us-west-2": "763104351884",
    "eu-west-1": "763104351884",
    "eu-central-1": "763104351884",
    "ap-northeast-1": "763104351884",
    "ap-southeast-2": "763104351884",
}
DLC_REPOSITORY = "vllm"


def vllm_image_uri(region: str, tag: str) -> str:
    """`<account>.dkr.ecr.<region>.amazonaws.com/vllm:<tag>`; KeyError for an unknown region."""
    return f"{DLC_REGISTRY_ACCOUNTS[region]}.dkr.ecr.{region}.amazonaws.com/{DLC_REPOSITORY}:{tag}"
