"""The AWS vLLM Deep Learning Container for SageMaker: where it lives, and which tag is
the newest SageMaker release in a region.

The registry account per region is names.DLC_REGISTRY_ACCOUNTS. The images are listed with
ECR DescribeImages on that registry's "vllm" repository (botocore ecr 2015-09-21:
registryId, repositoryName, filter.tagStatus, paginated by nextToken; IAM
ecr:DescribeImages). Released SageMaker
images carry a pinned tag such as 0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.1 next to
floating ones (server-sagemaker-cuda-v1) and EC2 ones; older lines get patch rebuilds, so
the push date says nothing about which is newest: the version numbers do.
"""

from __future__ import annotations

import re
from typing import Any

from runners.providers.sagemaker.names import (DLC_REGISTRY_ACCOUNTS, DLC_REPOSITORY,
                                               vllm_image_uri)

# <vLLM version>-gpu-<python, CUDA, OS>-sagemaker-v<image release>
SAGEMAKER_TAG = re.compile(r"^(\d+)\.(\d+)\.(\d+)-gpu-[a-z0-9.-]+-sagemaker-v(\d+)\.(\d+)$")


class ImageLookupError(LookupError):
    """No region entry or no SageMaker tag; one line."""


def tag_version(tag: str) -> tuple[int, ...] | None:
    """(vLLM major, minor, patch, image major, minor) of a pinned SageMaker tag, else None."""
    match = SAGEMAKER_TAG.match(tag)
    return tuple(int(part) for part in match.groups()) if match else None


def latest_sagemaker_image(ecr, region: str) -> dict[str, Any]:
    """The highest pinned SageMaker tag in the region's vLLM repository, with its digest."""
    account = DLC_REGISTRY_ACCOUNTS.get(region)
    if account is None:
        raise ImageLookupError(f"region {region!r}: no DLC registry known; known: "
                               f"{', '.join(DLC_REGISTRY_ACCOUNTS)}")
    candidates = []
    pages = ecr.get_paginator("describe_images").paginate(
        registryId=account, repositoryName=DLC_REPOSITORY, filter={"tagStatus": "TAGGED"})
    for page in pages:
        for image in page["imageDetails"]:
            for tag in image.get("imageTags") or []:
                version = tag_version(tag)
                if version is not None:
                    candidates.append((version, tag, image))
    if not candidates:
        raise ImageLookupError(f"{account}/{DLC_REPOSITORY} in {region}: no pinned SageMaker "
                               "tag (<version>-gpu-...-sagemaker-v<N.M>)")
    _, tag, image = max(candidates, key=lambda c: c[0])
    pushed = image.get("imagePushedAt")
    return {"region": region, "tag": tag, "image_uri": vllm_image_uri(region, tag),
            "digest": image.get("imageDigest"),
            "pushed_at": pushed.isoformat() if pushed else None,
            "sagemaker_tags_seen": len(candidates)}
