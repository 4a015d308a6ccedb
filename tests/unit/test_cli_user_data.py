"""`python -m runners user-data`: the boot script an EC2 experiment's instances run."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_prints_the_script_with_its_device_policy():
    out = run("user-data", "e2b-fp16-g5g", "--instance-type", "g5g.4xlarge",
              "--cache-bucket", "my-cache")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("#!/bin/bash\n")
    assert "printf 'CACHE_BUCKET=%q\\n' my-cache" in out.stdout
    values = run("user-data", "e2b-fp16-g5g", "--instance-type", "g5g.4xlarge", "--values")
    assert values.returncode == 0, values.stderr
    assert values.stdout.startswith("DEVICE_POLICY='benchstack device policy: "
                                    "instance_type=g5g.4xlarge ")
    assert "compute_dtype=float16" in values.stdout
    assert "CACHE_PREFIX=engines/e2b-fp16-g5g\n" in values.stdout


def test_wrong_backend_or_type_is_one_line():
    for args in (("nova-micro-bedrock",), ("e2b-fp16-g5g", "--instance-type", "g6.xlarge")):
        out = run("user-data", *args)
        assert out.returncode == 2
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr
