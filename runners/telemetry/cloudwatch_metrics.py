"""A SageMaker endpoint's CloudWatch metrics over a run's window, by GetMetricData.

Names, namespaces and units from the SageMaker Developer Guide ("Amazon SageMaker AI
metrics in Amazon CloudWatch"): invocation metrics in `AWS/SageMaker` and instance
metrics in `/aws/sagemaker/Endpoints`, both with dimensions EndpointName and VariantName.
ModelLatency, OverheadLatency and ModelSetupTime are in microseconds (ModelSetupTime is
published for serverless endpoints only, so an instance endpoint reports it missing).
CPU and GPU utilization are percent summed over cores / GPUs (they can exceed 100).
GetMetricData: at most 500 queries, Period a multiple of 60 for standard resolution, an
answer with NextToken has more (CloudWatch API Reference). IAM: cloudwatch:GetMetricData,
which takes no resource-level permission ("*").
"""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

INVOCATIONS_NS = "AWS/SageMaker"
INSTANCE_NS = "/aws/sagemaker/Endpoints"
# (id, namespace, metric, statistic, scale to the unit, unit)
METRICS: tuple[tuple[str, str, str, str, float, str], ...] = (
    ("invocations", INVOCATIONS_NS, "Invocations", "Sum", 1.0, "count"),
    ("invocation_4xx_errors", INVOCATIONS_NS, "Invocation4XXErrors", "Sum", 1.0, "count"),
    ("invocation_5xx_errors", INVOCATIONS_NS, "Invocation5XXErrors", "Sum", 1.0, "count"),
    ("model_latency_ms", INVOCATIONS_NS, "ModelLatency", "Average", 1e-3, "ms"),
    ("overhead_latency_ms", INVOCATIONS_NS, "OverheadLatency", "Average", 1e-3, "ms"),
    ("model_setup_time_ms", INVOCATIONS_NS, "ModelSetupTime", "Average", 1e-3, "ms"),
    ("gpu_utilization_pct", INSTANCE_NS, "GPUUtilization", "Average", 1.0, "%"),
    ("gpu_memory_utilization_pct", INSTANCE_NS, "GPUMemoryUtilization", "Average", 1.0, "%"),
    ("cpu_utilization_pct", INSTANCE_NS, "CPUUtilization", "Average", 1.0, "%"),
)
PERIOD_S = 60


def _utc(epoch_s: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc)


def queries(endpoint_name: str, variant: str, period_s: int = PERIOD_S) -> list[dict]:
    dims = [{"Name": "EndpointName", "Value": endpoint_name},
            {"Name": "VariantName", "Value": variant}]
    return [{"Id": qid, "ReturnData": True,
             "MetricStat": {"Metric": {"Namespace": ns, "MetricName": name, "Dimensions": dims},
                            "Period": period_s, "Stat": stat}}
            for qid, ns, name, stat, _, _ in METRICS]


def endpoint_metrics(cloudwatch, endpoint_name: str, variant: str, *, start_s: float,
                     end_s: float, period_s: int = PERIOD_S) -> dict[str, Any]:
    """Per metric: 1-minute points and a window summary (Sum: the total; Average: the
    mean of the 1-minute values), in the unit its id names; `missing` for a metric with
    no datapoint in the window. `cloudwatch` is a boto3 CloudWatch client."""
    start = _utc(start_s - start_s % period_s)  # whole periods, so the edges are not cut
    end = _utc(end_s + period_s - end_s % period_s)
    params: dict[str, Any] = {"MetricDataQueries": queries(endpoint_name, variant, period_s),
                              "StartTime": start, "EndTime": end, "ScanBy": "TimestampAscending"}
    points: dict[str, list[tuple[dt.datetime, float]]] = {m[0]: [] for m in METRICS}
    while True:
        page = cloudwatch.get_metric_data(**params)
        for result in page.get("MetricDataResults", []):
            points[result["Id"]] += list(zip(result.get("Timestamps", []),
                                             result.get("Values", [])))
        if not page.get("NextToken"):
            break
        params["NextToken"] = page["NextToken"]
    metrics: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for qid, ns, name, stat, scale, unit in METRICS:
        series = sorted(points[qid])
        if not series:
            missing[qid] = f"no {ns} {name} datapoint in the window"
            continue
        values = [v * scale for _, v in series]
        metrics[qid] = {
            "metric": f"{ns} {name} ({stat}, {period_s} s)", "unit": unit,
            "value": sum(values) if stat == "Sum" else statistics.fmean(values),
            "peak": max(values),
            "points": [[t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z"), v]
                       for (t, _), v in zip(series, values)]}
    return {"source": f"CloudWatch GetMetricData (EndpointName={endpoint_name}, "
                      f"VariantName={variant})",
            "window": [start.isoformat(), end.isoformat()], "metrics": metrics,
            "missing": missing}
