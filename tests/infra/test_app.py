"""app.py as a user runs it: all stacks by default, one experiment with -c, clear errors."""

import json
import os
import subprocess
import sys

import pytest

from runners import experiment
from stacks import names
from tests.conftest import EXPERIMENTS_DIR, ROOT, synth


def test_one_stack_per_experiment_and_region_plus_foundations(templates, experiments):
    cloud = [e for e in experiments if e.backend in experiment.CLOUD_BACKENDS]
    expected = {names.experiment(e.name, r) for e in cloud for r in e.regions}
    assert expected <= set(templates)
    assert not any("local" in name for name in templates)  # local runs need no AWS


def test_experiment_stack_carries_the_validated_definition(templates):
    template = templates[names.experiment("e2b-fp16-g5g", "us-east-1")]
    (param,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SSM::Parameter"
                and r["Properties"]["Name"] == names.experiment_parameter("e2b-fp16-g5g")]
    snapshot = json.loads(param["Properties"]["Value"])
    assert snapshot["ec2"]["instance_types"] == ["g5g.2xlarge", "g5g.4xlarge"]
    assert snapshot["engine"]["dtype"] == "float16"
    assert param["Properties"]["Tier"] == "Standard"


def test_selecting_one_experiment_builds_only_its_stacks(tmp_path):
    exp = experiment.find(EXPERIMENTS_DIR, "e2b-fp16-g5g")
    _, assembly = synth([exp], tmp_path)
    assert sorted(s.stack_name for s in assembly.stacks) == sorted([
        names.foundation("us-east-1"), names.foundation("us-west-2"),
        names.benchmark("us-east-1"), names.benchmark("us-west-2"),
        names.experiment("e2b-fp16-g5g", "us-east-1"),
        names.experiment("e2b-fp16-g5g", "us-west-2"),
        # the watchdog comes with any cloud experiment, with its home region's foundation
        names.foundation("us-east-2"), names.watchdog(),
    ])


def _app(*context: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """Run app.py the way the CDK CLI does: context in CDK_CONTEXT_JSON, output in CDK_OUTDIR."""
    ctx = json.loads((ROOT / "cdk.json").read_text())["context"]
    ctx.update(dict(pair.split("=", 1) for pair in context))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(CDK_CONTEXT_JSON=json.dumps(ctx), CDK_VALIDATION="false", **(env_extra or {}))
    return subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_unknown_experiment_name_is_one_clear_line(tmp_path):
    out = _app("experiment=nope", env_extra={"CDK_OUTDIR": str(tmp_path)})
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        f"error: {EXPERIMENTS_DIR / 'nope.toml'}: name: no experiment 'nope'; known: ")


def test_bad_experiment_file_fails_synth_with_one_line(tmp_path, monkeypatch):
    bad_dir = tmp_path / "experiments"
    bad_dir.mkdir()
    text = (EXPERIMENTS_DIR / "e2b-fp16-g5g.toml").read_text()
    (bad_dir / "e2b-fp16-g5g.toml").write_text(text.replace('dtype = "float16"',
                                                            'dtype = "bfloat16"'))
    script = (f"import sys, app; app.EXPERIMENTS_DIR = __import__('pathlib').Path({str(bad_dir)!r});"
              "app.main()")
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "out"), "CDK_CONTEXT_JSON": "{}"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "e2b-fp16-g5g.toml: engine.dtype: bfloat16 is not native on g5g.2xlarge" in out.stderr


@pytest.mark.slow
def test_cdk_cli_synth_works_offline_without_credentials(tmp_path, templates):
    """The real `cdk synth` of every stack through the CLI, with validation (cdk-nag) on:
    no AWS credentials, no network."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(CDK_DISABLE_CLI_TELEMETRY="true", CDK_VALIDATION="true",
               AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true",
               PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}")
    out = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), "--no-notices", "synth", "--quiet",
         "--output", str(tmp_path / "cdk.out")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    produced = sorted(p.name for p in (tmp_path / "cdk.out").glob("*.template.json"))
    assert produced == sorted(f"{name}.template.json" for name in templates)
