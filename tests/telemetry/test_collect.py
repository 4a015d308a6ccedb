"""Teardown's copy of the backend's telemetry into the run folder: the EC2 files the boot
script shipped (moto S3 and SSM), once per run, with what is missing said."""

from __future__ import annotations

import boto3
import pytest

from runners.providers.ec2 import telemetry_files
from runners.results.store import LocalStore
from runners.workflow import telemetry_collect
from runners import experiment
from tests.conftest import EXPERIMENTS_DIR
from tests.runners.fake_aws import mocked_aws


@pytest.fixture
def aws(monkeypatch):
    with mocked_aws(monkeypatch, "us-east-2"):
        s3 = boto3.client("s3", region_name="us-east-2")
        s3.create_bucket(Bucket="cache-bucket",
                         CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
        boto3.client("ssm", region_name="us-east-2").put_parameter(
            Name=telemetry_files.CACHE_BUCKET_PARAMETER, Value="cache-bucket", Type="String")
        yield s3


def test_fetch_reads_what_the_instance_shipped_and_names_the_rest(aws):
    where = telemetry_files.prefix("e2b-emb4-g6", "r1")
    assert where == "engines/e2b-emb4-g6/telemetry/r1/"
    aws.put_object(Bucket="cache-bucket", Key=where + "engine.log", Body=b"log line\n")
    aws.put_object(Bucket="cache-bucket", Key=where + "nvidia-smi.csv", Body=b"row\n")
    got = telemetry_files.fetch(aws, boto3.client("ssm", region_name="us-east-2"),
                                "e2b-emb4-g6", "r1")
    assert got["files"] == {"engine.log": b"log line\n", "nvidia-smi.csv": b"row\n"}
    assert got["location"] == "s3://cache-bucket/engines/e2b-emb4-g6/telemetry/r1/"
    assert got["missing"]["neuron-monitor.jsonl"].startswith("not in s3://cache-bucket/")


class FakeRun:
    def __init__(self, tmp_path, provider):
        self.store, self.provider = LocalStore(tmp_path), provider
        self.context = {"started_at": "2026-12-03T01:00:00Z"}

    def key(self, name):
        return name

    def write(self, name, obj):
        return self.store.put_json(name, obj)


def test_ec2_provider_collect_after_teardown_writes_files_once(aws, tmp_path):
    from runners.providers.ec2.provider import Ec2Provider

    where = telemetry_files.prefix("e2b-emb4-g6", "r1")
    aws.put_object(Bucket="cache-bucket", Key=where + "engine.log", Body=b"log line\n")
    provider = Ec2Provider(experiment.load(EXPERIMENTS_DIR / "e2b-emb4-g6.toml"), clients=lambda s, r: boto3.client(s, region_name=r))
    run = FakeRun(tmp_path, provider)
    placement = {"region": "us-east-2", "run_id": "r1",
                 "provision_started_at": "2026-12-03T01:00:05Z"}
    index = telemetry_collect.after_teardown(run, placement)
    assert index["files"] == ["engine.log"]
    assert (tmp_path / "telemetry" / "engine.log").read_bytes() == b"log line\n"
    assert "nvidia-smi.csv" in index["missing"]
    # a retried teardown reads the index back instead of copying again
    assert telemetry_collect.after_teardown(run, placement) == index


def test_a_provider_that_breaks_is_recorded_not_raised(tmp_path):
    class Broken:
        def collect_telemetry(self, *args):
            raise RuntimeError("no route")

    index = telemetry_collect.after_teardown(FakeRun(tmp_path, Broken()), {})
    assert index["missing"] == {"telemetry": "RuntimeError: no route"}


def test_local_provider_keeps_its_engine_log(tmp_path):
    from runners.providers.local import LocalProvider

    log = tmp_path / "engine.log"
    log.write_text("llama_context: n_ctx                 = 2048\n")
    provider = LocalProvider(experiment.load(EXPERIMENTS_DIR / "local-smollm2-135m.toml"))
    got = provider.collect_telemetry({"log": str(log)}, 0, 1)
    assert got["files"] == {"engine.log": b"llama_context: n_ctx                 = 2048\n"}
    gone = provider.collect_telemetry({"log": str(tmp_path / "absent.log")}, 0, 1)
    assert "absent.log" in gone["missing"]["engine.log"]


def test_nothing_is_collected_while_the_delete_is_still_refused(tmp_path):
    class Counting:
        calls = 0

        def collect_telemetry(self, *args):
            Counting.calls += 1
            return {"files": {}, "missing": {}, "location": None}

    run = FakeRun(tmp_path, Counting())
    waiting = telemetry_collect.after_teardown(run, {}, "retry-later")
    assert Counting.calls == 0 and "retry-later" in waiting["missing"]["telemetry"]
    assert not (tmp_path / "telemetry.json").exists()
    telemetry_collect.after_teardown(run, {}, "deleted")
    assert Counting.calls == 1 and (tmp_path / "telemetry.json").exists()
