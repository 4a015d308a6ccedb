"""The AWS SDK the runners need: a botocore that knows every field they read and write.

An older SDK does not fail loudly. It drops response members its service model lacks
(DescribeEndpoint's ProductionVariants[].InstancePools: the placed instance type, and so
the cost, read as None) and refuses request parameters it does not know (S3 PutObject
IfNoneMatch, which keeps results from being overwritten). Lambda's bundled boto3 may be
that old, so the runner asset carries the pinned SDK (benchstack_constructs/
runner_bundle.py) and each Lambda handler calls `require_botocore` when it loads, refusing
to start in one line on anything older.
"""

from __future__ import annotations

# botocore 1.43.1 is the first with DescribeEndpoint InstancePools (issue 20's review of the
# service models); S3 IfNoneMatch is older. requirements.txt pins a newer one.
MIN_BOTOCORE = (1, 43, 1)


class SdkTooOld(RuntimeError):
    """The botocore found cannot serve the runners."""


def _parse(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def require_botocore(version: str | None = None, where: str | None = None) -> None:
    """Raise SdkTooOld (one line) when botocore is older than MIN_BOTOCORE."""
    if version is None:
        import botocore

        version, where = botocore.__version__, where or botocore.__file__
    if _parse(version) < MIN_BOTOCORE:
        need = ".".join(map(str, MIN_BOTOCORE))
        raise SdkTooOld(f"benchstack runners need botocore >= {need}, found {version}"
                        f"{f' at {where}' if where else ''}: deploy the runner asset, which "
                        "carries the pinned SDK (benchstack_constructs/runner_bundle.py)")
