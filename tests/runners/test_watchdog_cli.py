"""`python -m runners watchdog`: the Lambda's sweep from a laptop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runners import cli
from tests.runners.watchdog_fixtures import aws, world  # noqa: F401 - fixtures
from tests.runners.watchdog_world import run_tags

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_from_a_laptop_reports_and_deletes_nothing(world, tmp_path, capsys):
    world.endpoint("us-east-1", "old", run_tags("run-old", "2000-01-01T00:00:00Z"))
    world.endpoint("us-west-2", "far", run_tags("run-far", "2000-01-01T00:00:00Z"))
    audit = tmp_path / "audit" / "sweep.jsonl"
    rc = cli.main(["watchdog", "--dry-run", "--regions", "us-east-1,us-east-2",
                   "--audit", str(audit)])
    assert rc == 0
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert {(l["region"], l["kind"], l["action"]) for l in lines} == {
        ("us-east-1", "sagemaker-endpoint", "would-delete"),
        ("us-east-1", "sagemaker-endpoint-config", "would-delete"),
        ("us-east-1", "sagemaker-model", "would-delete")}
    assert world.endpoints("us-east-1") == {"old"}
    err = capsys.readouterr().err
    assert "(dry run): 3 tagged resources in 2 regions: 3 would-delete" in err


def test_sweep_from_a_laptop_deletes_and_prints_the_audit(world, capsys):
    world.endpoint("us-east-2", "old", run_tags("run-old", "2000-01-01T00:00:00Z"))
    world.endpoint("us-east-2", "odd", run_tags("run-odd", "soon"))
    rc = cli.main(["watchdog", "--sequential"])
    out, err = capsys.readouterr()
    assert rc == 0
    actions = {(l["id"], l["kind"]): l["action"] for l in map(json.loads, out.splitlines())}
    assert actions[("old", "sagemaker-endpoint")] == "deleted"
    assert actions[("odd", "sagemaker-endpoint")] == "kept"
    assert "attention: us-east-2 sagemaker-endpoint odd: kept: " in err
    assert world.endpoints("us-east-2") == {"odd"}


def test_unknown_region_is_one_line(capsys):
    assert cli.main(["watchdog", "--dry-run", "--regions", "us-east-1,mars-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --regions: mars-1 not known; known: us-east-1, ")
    assert len(err.splitlines()) == 1


def test_no_credentials_is_one_line_without_a_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true")
    out = subprocess.run([sys.executable, "-m", "runners", "watchdog", "--dry-run"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error: no AWS credentials found")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_profile_that_does_not_exist_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_PROFILE="no-such-profile",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true")
    out = subprocess.run([sys.executable, "-m", "runners", "watchdog", "--dry-run"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: AWS configuration: The config profile (no-such-profile) could not be found"]
