"""SageMaker endpoint calls (create, describe, delete) and what their answers mean.

Response shapes follow the botocore sagemaker service model (2017-07-24): DescribeEndpoint
returns ProductionVariants[].InstancePools[] = {InstanceType, CurrentInstanceCount} and
ProductionVariants[].DeployedImages[] = {SpecifiedImage, ResolvedImage, ResolutionTime}.
Throttled calls are retried with backoff and jitter (runners.providers.retry); every other error is
interpreted here or raised.
"""

from __future__ import annotations

from typing import Any, Callable

from botocore.exceptions import ClientError

from runners.providers.base import ProvisionError
from runners.providers.retry import error_code, is_throttling, retry_throttled

# Endpoint states a delete refuses ("Cannot update in-progress endpoint ...") and a poll
# waits through.
IN_PROGRESS = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})

# FailureReason wording seen on endpoints, matched case-insensitively. Capacity:
# "Unable to provision requested ML compute capacity due to InsufficientInstanceCapacity
# error." and "CapacityError: Unable to provision requested ML compute capacity. Please
# retry using a different ML instance type."
_CAPACITY = ("insufficientinstancecapacity", "insufficient capacity",
             "unable to provision requested ml compute capacity", "capacityerror")
# Quota: CreateEndpoint raises ResourceLimitExceeded: "The account-level service limit
# 'ml.g6.xlarge for endpoint usage' is 0 Instances, ..."
_QUOTA = ("resourcelimitexceeded", "account-level service limit", "service quota")


def classify_failure(reason: str) -> str:
    """ProvisionError kind for an endpoint FailureReason: capacity (try the next region),
    quota (stop, name the quota) or fatal (model load, health check, image: stop)."""
    text = reason.lower()
    if any(marker in text for marker in _CAPACITY):
        return ProvisionError.CAPACITY
    if any(marker in text for marker in _QUOTA):
        return ProvisionError.QUOTA
    return ProvisionError.FATAL


def placed_instance_type(description: dict[str, Any]) -> str | None:
    """The pool type SageMaker placed the instance on: the pool whose CurrentInstanceCount
    is above zero in the variant's InstancePools summary."""
    for variant in description.get("ProductionVariants") or []:
        for pool in variant.get("InstancePools") or []:
            if pool.get("CurrentInstanceCount", 0) > 0:
                return pool["InstanceType"]
    return None


def deployed_image(description: dict[str, Any]) -> dict[str, str | None]:
    """The image as specified and as SageMaker resolved it (registry/repo@digest)."""
    for variant in description.get("ProductionVariants") or []:
        for image in variant.get("DeployedImages") or []:
            return {"specified": image.get("SpecifiedImage"),
                    "resolved": image.get("ResolvedImage")}
    return {"specified": None, "resolved": None}


def _is_not_found(exc: ClientError) -> bool:
    # DescribeEndpoint/DeleteEndpoint answer a missing endpoint with ValidationException
    # 'Could not find endpoint "arn:..."'.
    message = exc.response.get("Error", {}).get("Message", "").lower()
    return error_code(exc) in ("ValidationException", "ResourceNotFound") and (
        "could not find" in message or "not found" in message)


def _is_in_progress(exc: ClientError) -> bool:
    # DeleteEndpoint on a Creating endpoint: ValidationException 'Cannot update in-progress
    # endpoint "arn:aws:sagemaker:<region>:<account>:endpoint/<name>".'
    message = exc.response.get("Error", {}).get("Message", "").lower()
    return error_code(exc) == "ValidationException" and "in-progress" in message


def create(sagemaker, *, name: str, config_name: str, tags: dict[str, str],
           retry: Callable = retry_throttled) -> str:
    """CreateEndpoint; "created", or "exists" when this run already created it (a repeated
    Lambda invocation). Raises ProvisionError(quota) on ResourceLimitExceeded."""
    try:
        retry(lambda: sagemaker.create_endpoint(
            EndpointName=name, EndpointConfigName=config_name,
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()]))
    except ClientError as exc:
        message = exc.response.get("Error", {}).get("Message", str(exc))
        if error_code(exc) == "ResourceLimitExceeded":
            raise ProvisionError(ProvisionError.QUOTA, message,
                                 {"endpoint": name, "code": "ResourceLimitExceeded"}) from None
        if "already existing" in message.lower():
            return "exists"
        raise ProvisionError(ProvisionError.FATAL, f"CreateEndpoint {name}: {message}",
                             {"endpoint": name, "code": error_code(exc)}) from None
    return "created"


def describe(sagemaker, name: str, *, retry: Callable = retry_throttled) -> dict | None:
    """DescribeEndpoint, or None when the endpoint does not exist."""
    try:
        return retry(lambda: sagemaker.describe_endpoint(EndpointName=name))
    except ClientError as exc:
        if _is_not_found(exc):
            return None
        raise


def delete(sagemaker, name: str, *, retry: Callable = retry_throttled) -> str:
    """DeleteEndpoint: "deleting" (accepted), "gone" (nothing to delete), or "retry-later"
    (refused while the endpoint is in progress, or still throttled after every retry).
    Any other error is raised: a delete must never fail quietly."""
    try:
        retry(lambda: sagemaker.delete_endpoint(EndpointName=name))
    except ClientError as exc:
        if _is_not_found(exc):
            return "gone"
        if _is_in_progress(exc) or is_throttling(exc):
            return "retry-later"
        raise
    return "deleting"
