"""Experiment snapshots for workflow tests: a shipped experiment renamed "e2b-test", with
the two regions the tests deploy the workflow in."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from runners import experiment

HOME, OTHER = "us-east-2", "us-east-1"
SHIPPED = {"sagemaker": "e2b-emb4-ml-g6", "ec2": "e2b-emb4-g6"}
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def experiment_snapshot(backend: str) -> dict:
    """What the experiment stack stores in SSM and the execution input carries."""
    shipped = experiment.find(EXPERIMENTS, SHIPPED[backend])
    renamed = dataclasses.replace(shipped, name="e2b-test", regions=(HOME, OTHER))
    return json.loads(json.dumps(renamed.to_dict()))
