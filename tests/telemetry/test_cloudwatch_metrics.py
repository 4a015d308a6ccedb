"""SageMaker endpoint metrics over a run window, GetMetricData through Stubber."""

from __future__ import annotations

import datetime as dt

import pytest

from runners.telemetry import cloudwatch_metrics
from tests.telemetry.cloudwatch_fixtures import stubbed

UTC = dt.timezone.utc
START = dt.datetime(2026, 10, 12, 0, 20, 0, tzinfo=UTC)


@pytest.fixture
def cloudwatch():
    with stubbed("cloudwatch") as pair:
        yield pair


def minutes(n: int) -> list[dt.datetime]:
    return [START + dt.timedelta(minutes=i) for i in range(n)]


def test_window_summary_units_and_missing(cloudwatch):
    client, stub = cloudwatch
    expected = {"MetricDataQueries": cloudwatch_metrics.queries("bs-e-0123456789", "AllTraffic"),
                "StartTime": START, "EndTime": START + dt.timedelta(minutes=3),
                "ScanBy": "TimestampAscending"}
    stub.add_response("get_metric_data", {"MetricDataResults": [
        {"Id": "invocations", "Label": "Invocations", "Timestamps": minutes(2),
         "Values": [40.0, 60.0], "StatusCode": "Complete"},
        {"Id": "overhead_latency_ms", "Label": "OverheadLatency", "Timestamps": minutes(2),
         "Values": [230_000.0, 250_000.0], "StatusCode": "Complete"},
    ], "NextToken": "page-2"}, expected)
    stub.add_response("get_metric_data", {"MetricDataResults": [
        {"Id": "gpu_utilization_pct", "Label": "GPUUtilization", "Timestamps": minutes(2),
         "Values": [91.0, 87.0], "StatusCode": "Complete"},
        {"Id": "model_setup_time_ms", "Label": "ModelSetupTime", "Timestamps": [],
         "Values": [], "StatusCode": "Complete"},
    ]}, {**expected, "NextToken": "page-2"})
    start_s = START.timestamp() + 15
    found = cloudwatch_metrics.endpoint_metrics(client, "bs-e-0123456789", "AllTraffic",
                                                start_s=start_s, end_s=start_s + 130)
    metrics = found["metrics"]
    assert metrics["invocations"]["value"] == 100.0  # Sum: the total
    assert metrics["overhead_latency_ms"]["value"] == 240.0  # microseconds -> ms, mean
    assert metrics["gpu_utilization_pct"]["peak"] == 91.0
    assert found["missing"]["model_setup_time_ms"] == (
        "no AWS/SageMaker ModelSetupTime datapoint in the window")
    assert "invocation_5xx_errors" in found["missing"]


def test_queries_are_valid_for_the_api():
    """Ids match GetMetricData's ^[a-z][a-zA-Z0-9_]*$ and each names both dimensions."""
    import re
    qs = cloudwatch_metrics.queries("bs-e-0123456789", "AllTraffic")
    assert all(re.fullmatch(r"[a-z][a-zA-Z0-9_]*", q["Id"]) for q in qs)
    assert {d["Name"] for d in qs[0]["MetricStat"]["Metric"]["Dimensions"]} == {
        "EndpointName", "VariantName"}
    assert {q["MetricStat"]["Metric"]["Namespace"] for q in qs} == {
        "AWS/SageMaker", "/aws/sagemaker/Endpoints"}
