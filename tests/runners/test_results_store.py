"""The results store: local folder and S3 (moto), same interface, nothing overwritten."""

import boto3
import pytest
from moto import mock_aws

from runners.results import report
from runners.results.store import (KeyExists, LocalStore, S3Store, latest_attempt_key,
                                    open_store)


@pytest.fixture
def s3_store():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="results")
        yield S3Store("results", "bench", client)


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        yield LocalStore(tmp_path)
    else:
        yield request.getfixturevalue("s3_store")


def test_write_read_list(store):
    store.put_json("runs/a/decode.json", {"tokens_per_s": 1.5})
    store.put_text("runs/a/requests/decode.jsonl", "{}\n")
    assert store.get_json("runs/a/decode.json") == {"tokens_per_s": 1.5}
    assert store.exists("runs/a/decode.json") and not store.exists("runs/a/nope.json")
    assert store.list("runs/a/") == ["runs/a/decode.json", "runs/a/requests/decode.jsonl"]
    assert store.get_json_or_none("runs/a/nope.json") is None
    with pytest.raises(FileNotFoundError):
        store.get_bytes("runs/a/nope.json")


def test_nothing_is_overwritten(store):
    store.put_json("runs/a/summary.json", {"v": 1})
    with pytest.raises(KeyExists):
        store.put_json("runs/a/summary.json", {"v": 2})
    assert store.get_json("runs/a/summary.json") == {"v": 1}


def test_s3_keys_live_under_the_prefix(s3_store):
    s3_store.put_text("runs/x/report.md", "# hi")
    keys = [o["Key"] for o in s3_store.s3.list_objects_v2(Bucket="results")["Contents"]]
    assert keys == ["bench/runs/x/report.md"]
    assert s3_store.uri("runs/x/report.md") == "s3://results/bench/runs/x/report.md"


def test_local_store_refuses_keys_that_leave_its_root(tmp_path):
    with pytest.raises(ValueError):
        LocalStore(tmp_path / "root").put_text("../escape.txt", "x")


def test_open_store_picks_by_scheme(tmp_path):
    assert isinstance(open_store(tmp_path), LocalStore)
    with mock_aws():
        assert isinstance(open_store("s3://bucket/prefix"), S3Store)


def test_report_phase_writes_into_s3(s3_store):
    prefix = "runs/2026-12-03-x/r1/"
    s3_store.put_json(prefix + "manifest.json", {
        "run_id": "r1", "started_at": "2026-12-03T00:00:00Z", "placement": {"region": "us-east-2"},
        "experiment": {"name": "x", "backend": "bedrock", "model": {"id": "m"}}})
    s3_store.put_json(prefix + "decode.json", {"tokens_per_s": 100.0, "intercept_s": 0.2,
                                               "short_tokens": 16, "long_tokens": 512,
                                               "repeats": 5, "tokens_verified": True,
                                               "samples": []})
    s3_store.put_text(prefix + "requests/decode.jsonl", '{"phase": "decode"}\n')
    out = report.write_report(s3_store, prefix)
    summary = s3_store.get_json(prefix + "summary.json")
    assert summary["decode"]["tokens_per_s"] == 100.0 and summary["backend"] == "bedrock"
    assert summary["placement"] == {"region": "us-east-2", "az": None, "instance_type": None}
    assert s3_store.get_bytes(prefix + "requests.jsonl") == b'{"phase": "decode"}\n'
    assert prefix + "report.md" in out["written"]
    again = report.write_report(s3_store, prefix)  # a second report keeps the first files
    assert again["written"] == [] and prefix + "summary.json" in again["kept"]


def test_a_repeated_step_keeps_every_attempt_and_the_report_reads_the_last(tmp_path):
    store = LocalStore(tmp_path)
    assert latest_attempt_key("run/teardown", set(store.list("run/"))) is None
    assert store.put_json_attempt("run/teardown", {"state": "retry-later"}) == "run/teardown.json"
    assert store.put_json_attempt("run/teardown", {"state": "deleted"}) == "run/teardown.2.json"
    assert store.get_json("run/teardown.json") == {"state": "retry-later"}  # never overwritten
    last = latest_attempt_key("run/teardown", set(store.list("run/")))
    assert store.get_json(last) == {"state": "deleted"}
    assert report.read_files(store, "run/")["teardown"] == {"state": "deleted"}
