"""The Lambda handlers refuse, in one line, to start on a botocore older than the runners
need (runners/sdk.py): an old SDK drops DescribeEndpoint InstancePools quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners import sdk

ROOT = Path(__file__).resolve().parents[2]


def test_an_old_botocore_is_refused_in_one_line():
    with pytest.raises(sdk.SdkTooOld) as caught:
        sdk.require_botocore("1.34.162", "/var/runtime/botocore/__init__.py")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("benchstack runners need botocore >= 1.43.1, found 1.34.162 "
                              "at /var/runtime/botocore/__init__.py")


def test_the_pinned_botocore_passes():
    import botocore

    sdk.require_botocore()
    sdk.require_botocore("1.43.1")
    assert botocore.__version__ == "1.44.8"  # requirements.txt


@pytest.mark.parametrize("handler", ["runners.workflow.lambda_handler",
                                     "runners.watchdog.lambda_handler"])
def test_a_handler_does_not_start_under_an_old_botocore(tmp_path, handler):
    old = tmp_path / "botocore"
    old.mkdir()
    (old / "__init__.py").write_text("__version__ = '1.34.162'\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-c", f"import {handler}"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("runners.sdk.SdkTooOld: benchstack runners need botocore >= "
                           "1.43.1, found 1.34.162")
