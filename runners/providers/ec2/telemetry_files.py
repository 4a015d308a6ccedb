"""The files an engine instance ships for its run: the engine log and the device samples.

The boot script (user_data.sh, "benchstack telemetry" block) copies them to the cache
bucket under `engines/<experiment>/telemetry/<run id>/` every 30 s and at shutdown; the
instance role may write only its experiment's prefix. Teardown reads what is there (at most
30 s old, plus the shutdown copy when it has landed) so the report can use it after the
instance is gone. IAM for the reader: s3:ListBucket (prefix engines/*/telemetry/*) and
s3:GetObject on those keys of the cache bucket; ssm:GetParameter for its name.
"""

from __future__ import annotations

from typing import Any

CACHE_BUCKET_PARAMETER = "/benchstack/foundation/cache-bucket"  # published by the foundation
SHIPPED = ("engine.log", "nvidia-smi.csv", "neuron-monitor.jsonl", "device-missing.txt")
MAX_BYTES = 50 * 1024 * 1024  # a runaway log is cut, not copied whole into the run folder


def prefix(experiment: str, run_id: str) -> str:
    return f"engines/{experiment}/telemetry/{run_id}/"


def fetch(s3, ssm, experiment: str, run_id: str) -> dict[str, Any]:
    """{"files": {name: bytes}, "missing": {name: why}, "location": s3 URI}."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        bucket = ssm.get_parameter(Name=CACHE_BUCKET_PARAMETER)["Parameter"]["Value"]
    except (ClientError, BotoCoreError) as exc:
        return {"files": {}, "location": None,
                "missing": {name: f"cache bucket name ({CACHE_BUCKET_PARAMETER}): {exc}"
                            for name in SHIPPED}}
    where = prefix(experiment, run_id)
    location = f"s3://{bucket}/{where}"
    try:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=where).get("Contents", [])
    except (ClientError, BotoCoreError) as exc:
        return {"files": {}, "location": location,
                "missing": {name: f"listing {location}: {exc}" for name in SHIPPED}}
    present = {o["Key"][len(where):]: o["Size"] for o in listed}
    files: dict[str, bytes] = {}
    missing: dict[str, str] = {}
    for name in SHIPPED:
        if name not in present:
            missing[name] = f"not in {location} (the instance shipped none)"
            continue
        try:
            body = s3.get_object(Bucket=bucket, Key=where + name,
                                 Range=f"bytes=0-{MAX_BYTES - 1}")["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            missing[name] = f"reading {location}{name}: {exc}"
            continue
        files[name] = body
    return {"files": files, "missing": missing, "location": location}
