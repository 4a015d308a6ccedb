"""The boot script's telemetry block run under bash in a scratch root: fake nvidia-smi,
journalctl, aws, systemctl and systemd-run record what they were asked; the sampler and
the push script it writes are then run and their output checked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runners import experiment
from runners.providers.ec2.user_data import EngineLaunch, render
from runners.telemetry import device, engine_log

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "# >>> benchstack telemetry", "# <<< benchstack telemetry <<<"

FAKES = {
    "nvidia-smi": 'echo "$@" > "$FAKE_LOG/nvidia-smi.args"\n'
                  'echo "2026/10/12 00:20:01.123, 87, 64, 20480, 23034, 6251, 71.52"\n',
    "journalctl": 'echo "$@" > "$FAKE_LOG/journalctl.args"\n'
                  'echo "2026-10-12T00:18:44+0000 ip-10-0-1-2 docker[2211]: (EngineCore_DP0 '
                  'pid=301) INFO 10-12 00:18:44 [kv_cache_utils.py:1087] GPU KV cache size: '
                  '650,783 tokens"\n',
    "aws": 'echo "$@" >> "$FAKE_LOG/aws.calls"\n',
    "systemctl": 'echo "$@" >> "$FAKE_LOG/systemctl.calls"\n',
    "systemd-run": 'echo "$@" >> "$FAKE_LOG/systemd-run.calls"\n',
}


def block(script: str, root: Path) -> str:
    text = script[script.index(BEGIN):script.index(END)]
    for path in ("/usr/local/sbin", "/etc/systemd/system", "/etc/benchstack",
                 "/var/log/benchstack-telemetry"):
        text = text.replace(path, f"{root}{path}")
    return text


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_block_samples_ships_and_starts_its_units(tmp_path):
    exp = experiment.load(ROOT / "experiments" / "e2b-emb4-g6.toml")
    script = render(EngineLaunch(exp, exp.ec2.instance_types[0], "cache-bucket-1"))
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    for d in (bin_dir, log, tmp_path / "usr/local/sbin", tmp_path / "etc/systemd/system",
              tmp_path / "etc/benchstack"):
        d.mkdir(parents=True)
    # What the script before the block has put in the launch values file and the shell.
    values = tmp_path / "etc/benchstack/launch.env"
    values.write_text("ACCELERATOR=nvidia\nAWS_DEFAULT_REGION=us-east-2\n")
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    prelude = (f"set -uo pipefail\nVALUES={values}\n. \"$VALUES\"\n"
               "CACHE_URI=s3://cache-bucket-1/engines/e2b-emb4-g6\n"
               "imds() { case $1 in meta-data/tags/instance/benchstack:run-id) "
               "echo 20261203T010000Z-ab12cd ;; *) return 1 ;; esac; }\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_LOG": str(log)}
    ran = subprocess.run(["bash", "-c", prelude + block(script, tmp_path)], env=env,
                         capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert "telemetry to s3://cache-bucket-1/engines/e2b-emb4-g6/telemetry/" \
           "20261203T010000Z-ab12cd/" in ran.stdout
    assert "enable --now benchstack-telemetry" in (log / "systemctl.calls").read_text()
    assert "--on-unit-active=30s" in (log / "systemd-run.calls").read_text()
    unit = (tmp_path / "etc/systemd/system/benchstack-telemetry.service").read_text()
    assert "Before=benchstack-engine.service" in unit and "ExecStopPost=" in unit

    sbin = tmp_path / "usr/local/sbin"
    sampled = subprocess.run([str(sbin / "benchstack-device-sampler")], env=env,
                             capture_output=True, text=True, timeout=30)
    assert sampled.returncode == 0, sampled.stderr
    args = (log / "nvidia-smi.args").read_text().split()
    assert f"--query-gpu={device.NVIDIA_QUERY}" in args and args[-2:] == ["-l", "1"]
    samples = tmp_path / "var/log/benchstack-telemetry/nvidia-smi.csv"
    assert device.parse_nvidia_smi(samples.read_text())[0]["utilization_gpu_pct"] == 87

    pushed = subprocess.run([str(sbin / "benchstack-telemetry-push")], env=env,
                            capture_output=True, text=True, timeout=30)
    assert pushed.returncode == 0, pushed.stderr
    assert (log / "journalctl.args").read_text().split() == [
        "-u", "benchstack-engine", "-o", "short-iso", "--no-pager"]
    calls = (log / "aws.calls").read_text().splitlines()
    target = "s3://cache-bucket-1/engines/e2b-emb4-g6/telemetry/20261203T010000Z-ab12cd"
    assert any(c.endswith(f"engine.log {target}/engine.log") for c in calls), calls
    assert any(c.endswith(f"nvidia-smi.csv {target}/nvidia-smi.csv") for c in calls), calls
    journal = (tmp_path / "var/log/benchstack-telemetry/engine.log").read_text()
    facts = engine_log.parse(journal.splitlines(), "engine log")
    assert facts["kv_cache_tokens"] == 650_783
    assert facts["found"]["kv_cache_tokens"]["at"] == "2026-10-12T00:18:44+0000"
