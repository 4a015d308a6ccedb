#!/usr/bin/env python3
"""CDK entry point: every experiment's stacks by default, one with `-c experiment=NAME`.

Synthesizes offline with no AWS credentials: stacks are bound to a region, and to an
account only when CDK_DEFAULT_ACCOUNT is set.
"""

import os
import sys
from pathlib import Path

from aws_cdk import App

from runners import experiment as experiments
from stacks.build import build

EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"


def main() -> None:
    app = App()
    name = app.node.try_get_context("experiment")
    try:
        chosen = ([experiments.find(EXPERIMENTS_DIR, name)] if name
                  else experiments.load_all(EXPERIMENTS_DIR))
        build(app, chosen, validate=os.environ.get("CDK_VALIDATION", "true") != "false",
              account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
    except experiments.ExperimentError as exc:  # a bad experiment file or context value
        sys.exit(f"error: {exc}")
    app.synth()


if __name__ == "__main__":
    main()
