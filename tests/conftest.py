"""Shared fixtures: the repo's experiments and a synthesized cloud assembly.

Synthesis is the slow part (a jsii round trip per construct), so the default app is
synthesized once per session and every infra test reads its templates.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS_DIR = ROOT / "experiments"


def cdk_context(**extra) -> dict:
    """The context `cdk synth` would pass: cdk.json's feature flags plus `extra`."""
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    return {**context, **extra}


def synth(experiments, tmp_dir: Path, *, validate: bool = False):
    """Build benchstack's stacks for `experiments` in a fresh App and synthesize them."""
    from aws_cdk import App

    from stacks.build import build

    app = App(outdir=str(tmp_dir), context=cdk_context())
    built = build(app, experiments, validate=validate)
    return built, app.synth()


@pytest.fixture(scope="session")
def experiments():
    from runners import experiment

    return experiment.load_all(EXPERIMENTS_DIR)


@pytest.fixture(scope="session")
def assembly(experiments, tmp_path_factory):
    _, cloud_assembly = synth(experiments, tmp_path_factory.mktemp("cdk.out"))
    return cloud_assembly


@pytest.fixture(scope="session")
def templates(assembly) -> dict[str, dict]:
    """Stack name -> synthesized CloudFormation template."""
    return {stack.stack_name: stack.template for stack in assembly.stacks}
