"""The runner asset's SDK (benchstack_constructs/runner_bundle.py): the distributions it
copies are exactly boto3's run-time closure, and a version off the pin stops the synth."""

from __future__ import annotations

import importlib.metadata

import pytest
from packaging.requirements import Requirement

from benchstack_constructs import runner_bundle


def test_the_bundled_distributions_are_boto3s_runtime_closure():
    wanted, todo = set(), ["boto3"]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for line in importlib.metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name.lower())
    assert wanted == set(runner_bundle.SDK_DISTRIBUTIONS)


def test_a_version_off_the_pin_stops_the_synth_in_one_line(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("boto3==1.0.0\nbotocore==1.44.8\n")
    with pytest.raises(runner_bundle.BundleError) as caught:
        runner_bundle.check_pins(requirements)
    assert str(caught.value) == ("runner asset: boto3 1.44.5 is installed but "
                                 "requirements.txt pins 1.0.0; reinstall the requirements")


def test_the_bundle_is_runners_and_the_sdk(tmp_path):
    runner_bundle.bundle(tmp_path)
    assert (tmp_path / "runners" / "sdk.py").exists()
    assert (tmp_path / "botocore" / "data" / "sagemaker").is_dir()
    assert not list((tmp_path / "runners").rglob("*.sh"))
