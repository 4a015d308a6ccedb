"""User data for an engine instance: the template beside this file, rendered in pure Python.

No CDK import here: the launch template construct and `python -m runners user-data` render
the same script, and the rendering (device policy, engine flags, cache locations) is unit
tested directly. The experiment's values travel as data, never as script text: one file
of shell-quoted assignments (`launch_values_file`), base64-encoded into a single line of
the script, which decodes it and reads it with `.`. Only the cache bucket (a CloudFormation
token at synth time, from our own stack) is a shell-quoted placeholder. A placeholder without
a value, or a value without a placeholder, is an error rather than a silently broken script.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from runners import hardware
from runners.experiment import Experiment

TEMPLATE = Path(__file__).with_name("user_data.sh")
_PLACEHOLDER = re.compile(r"\{\{ (\w+) \}\}")
# A SecureString the account may keep for gated models (Gemma needs the licence accepted).
HF_TOKEN_PARAMETER = "/benchstack/hf-token"
_ECR_IMAGE = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com"
                        r"/(?P<repository>[a-z0-9._/-]+)(?::[\w.-]+|@sha256:[0-9a-f]+)?$")

# Where each engine keeps what is worth restoring: Hugging Face downloads and the
# compiler's output (torch.compile/CUDA graphs for vLLM, NEFFs for Neuron).
_CACHE_DIRS = {
    "nvidia": ("/root/.cache/huggingface", "/root/.cache/vllm"),
    "aws-neuron": ("/root/.cache/huggingface", "/var/tmp/neuron-compile-cache"),
}


@dataclass(frozen=True)
class EngineLaunch:
    """What one launch template starts: the experiment on one instance type."""

    experiment: Experiment
    instance_type: str
    cache_bucket: str  # bucket name (a CloudFormation token at synth time)

    @property
    def entry(self) -> hardware.InstanceType:
        return hardware.lookup(self.instance_type)

    @property
    def compute_dtype(self) -> str:
        return self.experiment.compute_dtype(self.instance_type)

    @property
    def compute_capability(self) -> str:
        cc = self.entry.accelerator.compute_capability
        return ".".join(map(str, cc)) if cc else "n/a"

    @property
    def cache_prefix(self) -> str:
        """Caches are per experiment: a model build and its compiled shapes go together."""
        return f"engines/{self.experiment.name}"


@dataclass(frozen=True)
class EcrImage:
    account: str
    region: str
    repository: str

    @property
    def registry(self) -> str:
        return f"{self.account}.dkr.ecr.{self.region}.amazonaws.com"


def ecr_image(image: str) -> EcrImage | None:
    """The ECR repository an engine image is pulled from, or None for a public registry."""
    match = _ECR_IMAGE.match(image)
    return EcrImage(**match.groupdict()) if match else None


def device_policy(launch: EngineLaunch) -> str:
    """The first line the instance prints: a misconfigured instance is one grep away."""
    accel = launch.entry.accelerator
    return (f"benchstack device policy: instance_type={launch.instance_type} "
            f"accelerator={accel.name.replace(' ', '_')} "
            f"compute_capability={launch.compute_capability} "
            f"compute_dtype={launch.compute_dtype} engine={launch.experiment.ec2.engine_image} "
            f"port={launch.experiment.ec2.engine_port}")


def _flag_words(name: str, value: str | int | float | bool) -> list[str]:
    """An engine flag as argv words: true is the bare flag, false leaves it out."""
    if value is True:
        return [f"--{name}"]
    if value is False:
        return []
    return [f"--{name}", str(value)]


def engine_args(launch: EngineLaunch) -> list[str]:
    """The engine's command line after the image name.

    vLLM gets the experiment's flags. The Neuron port keeps its image's own command and
    reads its settings from the environment (`docker_env`); only extra_flags are appended.
    """
    exp, engine = launch.experiment, launch.experiment.engine
    args: list[str] = []
    if launch.entry.accelerator.vendor == "nvidia":
        args += [
            "--model", exp.model.id,
            "--served-model-name", exp.model.served_name,
            "--port", str(exp.ec2.engine_port),
            "--max-model-len", str(engine.max_model_len),
            "--gpu-memory-utilization", f"{engine.gpu_memory_utilization:.2f}",
            "--tensor-parallel-size", str(engine.tensor_parallel_size),
            "--dtype", launch.compute_dtype,
        ]
        if engine.tool_call_parser:
            args += ["--enable-auto-tool-choice", "--tool-call-parser", engine.tool_call_parser]
    for name, value in engine.extra_flags.items():
        args += _flag_words(name, value)
    return args


def docker_env(launch: EngineLaunch) -> list[str]:
    """Environment for the container: the Neuron port reads its settings from it too."""
    exp = launch.experiment
    env = {"HF_HOME": _CACHE_DIRS[launch.entry.accelerator.vendor][0]}
    if launch.entry.accelerator.vendor == "aws-neuron":
        env.update({
            "NEURON_COMPILE_CACHE_URL": _CACHE_DIRS["aws-neuron"][1],
            "MODEL_ID": exp.model.id,
            "SERVED_MODEL_NAME": exp.model.served_name,
            "PORT": str(exp.ec2.engine_port),
            "MAX_MODEL_LEN": str(exp.engine.max_model_len),
            "COMPUTE_DTYPE": launch.compute_dtype,
        })
    return [word for key, value in env.items() for word in ("-e", f"{key}={value}")]


def launch_values(launch: EngineLaunch) -> dict[str, str | list[str]]:
    """What the boot script and the engine unit read: strings, and argv lists (arrays)."""
    vendor = launch.entry.accelerator.vendor
    model_dir, compile_dir = _CACHE_DIRS[vendor]
    ecr = ecr_image(launch.experiment.ec2.engine_image)
    return {
        "DEVICE_POLICY": device_policy(launch),
        "ACCELERATOR": vendor,
        "CATALOG_COMPUTE_CAPABILITY": launch.compute_capability,
        "CACHE_PREFIX": launch.cache_prefix,
        "FALLBACK_TTL_S": str(round(launch.experiment.ttl_hours * 3600)),
        "HF_TOKEN_PARAMETER": HF_TOKEN_PARAMETER,
        "ECR_REGISTRY": ecr.registry if ecr else "",
        "ECR_REGION": ecr.region if ecr else "",
        "PORT": str(launch.experiment.ec2.engine_port),
        "MODEL_CACHE_DIR": model_dir,
        "COMPILE_CACHE_DIR": compile_dir,
        "DOCKER_ENV": docker_env(launch),
        "IMAGE": launch.experiment.ec2.engine_image,
        "ENGINE_ARGS": engine_args(launch),
    }


def launch_values_file(launch: EngineLaunch) -> str:
    """/etc/benchstack/launch.env: `NAME='value'` and `NAME=('word' ...)`, shell-quoted, so
    reading it with `.` assigns and never runs anything, whatever a value holds."""
    lines = []
    for name, value in launch_values(launch).items():
        quoted = f"({' '.join(map(shlex.quote, value))})" if isinstance(value, list) \
            else shlex.quote(value)
        lines.append(f"{name}={quoted}\n")
    return "".join(lines)


def values(launch: EngineLaunch) -> dict[str, str]:
    """Every placeholder's value: the values file as one base64 word, the bucket quoted."""
    encoded = base64.b64encode(launch_values_file(launch).encode()).decode()
    return {"launch_values_b64": encoded, "cache_bucket": shlex.quote(launch.cache_bucket)}


def render_template(template: str, substitutions: dict[str, str]) -> str:
    """Fill `{{ name }}` placeholders; every placeholder and every value must be used."""
    used = set(_PLACEHOLDER.findall(template))
    missing, unused = used - set(substitutions), set(substitutions) - used
    if missing or unused:
        raise ValueError(f"user-data template: placeholders without values {sorted(missing)}, "
                         f"values without placeholders {sorted(unused)}")
    return _PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], template)


def render(launch: EngineLaunch) -> str:
    """The boot script for `launch`."""
    return render_template(TEMPLATE.read_text(encoding="utf-8"), values(launch))
