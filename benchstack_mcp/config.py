"""What the tools need from their surroundings: where experiments and runs are, and how
an AWS session is made (tests inject moto's or a stubbed one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import boto3

from runners import experiment
from runners.cli import EXPERIMENTS_DIR


@dataclass(frozen=True)
class Config:
    experiments_dir: Path = EXPERIMENTS_DIR
    store: str = "."  # a local run writes <store>/runs/<date>-<experiment>/<run-id>/
    compare_dir: Path = Path("runs") / "compare"  # one new folder per comparison
    session_factory: Callable[[], Any] = boto3.Session

    def session(self):
        return self.session_factory()

    def experiment(self, name: str) -> experiment.Experiment:
        return experiment.find(self.experiments_dir, name)
