"""The engine boot script, rendered without CDK: device policy, flags, ports, caches."""

from __future__ import annotations

import base64
import dataclasses
import subprocess
from pathlib import Path

import pytest

from runners.providers.ec2.user_data import (
    EcrImage, EngineLaunch, ecr_image, engine_args, render, render_template)
from runners import experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def launch(name: str, itype: str | None = None, **engine_changes) -> EngineLaunch:
    exp = experiment.load(EXPERIMENTS / f"{name}.toml")
    if engine_changes:
        exp = dataclasses.replace(exp, engine=dataclasses.replace(exp.engine, **engine_changes))
    return EngineLaunch(exp, itype or exp.ec2.instance_types[0], "cache-bucket-1")


def values_file(script: str) -> str:
    """The launch values the script decodes, as the instance would."""
    line = next(l for l in script.splitlines() if l.startswith('base64 -d > "$VALUES" <<< '))
    return base64.b64decode(line.rsplit(" ", 1)[1]).decode()


def read_values(script: str, tmp: Path, names: list[str]) -> list[str]:
    """Each variable's value after bash reads the values file with `.`."""
    env = tmp / "launch.env"
    env.write_text(values_file(script))
    probe = "; ".join(f'printf "%s\\0" "${name}"' for name in names)
    out = subprocess.run(["bash", "-c", f". {env}; {probe}"], capture_output=True, timeout=10,
                         cwd=tmp)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().split("\0")[:-1]


def output_lines(script: str, tmp: Path) -> list[str]:
    """What the script prints first: the device policy, then its echo lines."""
    return read_values(script, tmp, ["DEVICE_POLICY"]) + [
        line for line in script.split("2>&1\n", 1)[1].splitlines() if line.startswith("echo ")]


def docker_words(script: str, tmp: Path) -> list[str]:
    """The engine unit's docker argv: its script run with docker replaced by a printer."""
    env = tmp / "launch.env"
    env.write_text(values_file(script))
    start = script.index("<<'ENGINE'\n") + len("<<'ENGINE'\n")
    engine = script[start:script.index("\nENGINE\n", start)]
    engine = engine.replace("/etc/benchstack/launch.env", str(env)).replace(
        "exec /usr/bin/docker run", "printf '%s\\0' run")
    out = subprocess.run(["bash", "-c", engine], capture_output=True, timeout=10, cwd=tmp)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().split("\0")[1:-1]


def test_g5g_prints_a_float16_device_policy_first(tmp_path):
    script = render(launch("e2b-fp16-g5g"))
    first = output_lines(script, tmp_path)[0]
    assert first.startswith("benchstack device policy: instance_type=g5g.2xlarge ")
    assert "accelerator=NVIDIA_T4G" in first
    assert "compute_capability=7.5" in first
    assert "compute_dtype=float16" in first
    words = docker_words(script, tmp_path)
    assert words[words.index("--dtype") + 1] == "float16"
    assert "--gpus" in script


def test_auto_dtype_on_g6_resolves_to_bfloat16_from_the_catalog(tmp_path):
    script = render(launch("e2b-emb4-g6"))
    assert "compute_dtype=bfloat16" in output_lines(script, tmp_path)[0]
    assert "compute_capability=8.9" in output_lines(script, tmp_path)[0]
    words = docker_words(script, tmp_path)
    assert words[words.index("--dtype") + 1] == "bfloat16"


def test_auto_dtype_on_g5g_would_be_float16_too():
    assert "--dtype" in engine_args(launch("e2b-fp16-g5g", dtype="auto"))
    args = engine_args(launch("e2b-fp16-g5g", dtype="auto"))
    assert args[args.index("--dtype") + 1] == "float16"


def test_vllm_gets_the_experiments_flags():
    args = engine_args(launch("e2b-emb4-g6"))
    joined = " ".join(args)
    for expected in ("--max-model-len 8192", "--gpu-memory-utilization 0.90",
                     "--enable-auto-tool-choice", "--tool-call-parser gemma4",
                     "--served-model-name gemma-4-e2b", "--port 8000",
                     "--model xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"):
        assert expected in joined


def test_extra_flags_true_is_bare_false_is_left_out():
    args = engine_args(launch("e2b-emb4-g6", extra_flags={
        "enforce-eager": True, "enable-prefix-caching": False, "max-num-seqs": 16}))
    assert "--enforce-eager" in args
    assert "--enable-prefix-caching" not in args
    assert args[args.index("--max-num-seqs") + 1] == "16"


@pytest.mark.parametrize("name", ["e2b-neuron-inf2", "e2b-neuron-trn1"])
def test_neuron_runs_its_image_on_8080_with_the_devices_passed_through(name, tmp_path):
    script = render(launch(name))
    words = docker_words(script, tmp_path)
    assert words[words.index("-p") + 1] == "8080:8080"
    assert "PORT=8080" in words
    assert "MODEL_ID=google/gemma-4-E2B-it" in words
    assert "COMPUTE_DTYPE=bfloat16" in words
    assert words[-1] == "xbill9/gemma4-optb:slim"  # the image's own command, no vLLM flags
    assert 'for dev in /dev/neuron*; do accel+=(--device="$dev")' in script
    assert "--gpus" not in words
    assert "compute_capability=n/a" in output_lines(script, tmp_path)[0]


def test_caches_are_restored_and_pushed_under_the_experiments_prefix(tmp_path):
    script = render(launch("e2b-fp16-g5g"))
    assert "printf 'CACHE_BUCKET=%q\\n' cache-bucket-1 >>" in script
    assert read_values(script, tmp_path, ["CACHE_PREFIX"]) == ["engines/e2b-fp16-g5g"]
    assert 'CACHE_URI="s3://$CACHE_BUCKET/$CACHE_PREFIX"' in script
    assert 'aws s3 sync --only-show-errors "$CACHE_URI/$part/" "$CACHE_ROOT/$part/"' in script
    assert "ExecStopPost=/usr/local/sbin/benchstack-cache-push" in script
    assert "--delete" not in script  # the role cannot delete, and nothing should


def test_expiry_comes_from_the_instance_tag_with_the_ttl_as_fallback(tmp_path):
    script = render(launch("e2b-fp16-g5g"))
    assert "meta-data/tags/instance/benchstack:expires-at" in script
    assert read_values(script, tmp_path, ["FALLBACK_TTL_S"]) == ["10800"]  # ttl_hours = 3
    assert "systemctl poweroff" in script


@pytest.mark.parametrize("image", [
    "img; touch pwned", "img\nENGINE\ntouch pwned\n", "img'\ntouch pwned\n'", "$(touch pwned)",
    "img\nPUSH\ntouch pwned"])
def test_values_are_data_whatever_they_hold(tmp_path, image):
    """Issue 15: a newline in a value used to end the quoted heredoc and run as root. The
    schema now refuses control characters; the script must not depend on that."""
    exp = experiment.load(EXPERIMENTS / "e2b-emb4-g6.toml")
    hostile = dataclasses.replace(exp, ec2=dataclasses.replace(exp.ec2, engine_image=image))
    script = render(EngineLaunch(hostile, "g6.xlarge", "b"))
    assert "pwned" not in script  # no experiment text in the script at all
    words = docker_words(script, tmp_path)
    assert words[-len(engine_args(EngineLaunch(hostile, "g6.xlarge", "b"))) - 1] == image
    assert read_values(script, tmp_path, ["IMAGE"]) == [image]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("name,itype", [
    (e.stem, t) for e in sorted(EXPERIMENTS.glob("*.toml"))
    for exp in [experiment.load(e)] if exp.ec2 for t in exp.ec2.instance_types
])
def test_every_rendered_script_is_valid_bash(name, itype):
    result = subprocess.run(["bash", "-n"], input=render(launch(name, itype)),
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 0, result.stderr


def test_a_placeholder_without_a_value_or_a_value_without_a_placeholder_is_an_error():
    assert render_template("a {{ x }} b", {"x": "1"}) == "a 1 b"
    with pytest.raises(ValueError, match=r"without values \['y'\]"):
        render_template("{{ x }} {{ y }}", {"x": "1"})
    with pytest.raises(ValueError, match=r"without placeholders \['z'\]"):
        render_template("{{ x }}", {"x": "1", "z": "2"})


def test_the_region_comes_from_metadata_for_every_aws_cli_call(tmp_path):
    script = render(launch("e2b-emb4-g6"))
    assert "AWS_DEFAULT_REGION=$(imds meta-data/placement/region)" in script
    assert """printf 'AWS_DEFAULT_REGION=%q\\n' "$AWS_DEFAULT_REGION" >> "$VALUES"\n""" in script
    push = script[script.index("<<'PUSH'"):script.index("\nPUSH\n")]
    assert ". /etc/benchstack/launch.env\nexport AWS_DEFAULT_REGION\n" in push


def test_the_hugging_face_token_reaches_the_engine_through_a_root_only_file(tmp_path):
    script = render(launch("e2b-emb4-g6"))
    assert read_values(script, tmp_path, ["HF_TOKEN_PARAMETER"]) == ["/benchstack/hf-token"]
    assert "chmod 0600 /run/benchstack/engine.env" in script
    words = docker_words(script, tmp_path)
    assert words[words.index("--env-file") + 1] == "/run/benchstack/engine.env"
    assert not any(w.startswith("HF_TOKEN=") for w in words)  # never on a command line


@pytest.mark.parametrize("image,expected", [
    ("123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-sm75:0.27.2rc0",
     EcrImage("123456789012", "us-west-2", "vllm-sm75")),
    ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/vllm@sha256:" + "a" * 64,
     EcrImage("123456789012", "eu-west-1", "team/vllm")),
    ("vllm/vllm-openai:v0.30.0", None),
    ("vllm-sm75:0.27.2rc0", None),
])
def test_ecr_images_are_recognised(image, expected):
    assert ecr_image(image) == expected


def test_a_public_image_renders_no_docker_login_target(tmp_path):
    script = render(launch("e2b-emb4-g6"))
    assert read_values(script, tmp_path, ["ECR_REGISTRY"]) == [""]
    assert 'if [ -n "$ECR_REGISTRY" ]; then' in script
