"""The experiment schema: every shipped file is valid, every bad input gets its one line."""

from __future__ import annotations

import copy
import dataclasses
import json
import tomllib

import pytest

from runners import experiment
from runners.experiment import ExperimentError, parse
from tests.conftest import EXPERIMENTS_DIR

SAGEMAKER = {
    "name": "sm",
    "backend": "sagemaker",
    "regions": ["us-east-2", "us-east-1"],
    "model": {"id": "google/gemma-4-E2B-it", "served_name": "g", "build": "bf16",
              "precision": "bf16"},
    "sagemaker": {
        "image_tag": "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.1",
        "instance_pools": [{"instance_type": "ml.g6.xlarge", "priority": 1},
                           {"instance_type": "ml.g6.2xlarge", "priority": 2}],
    },
}
EC2 = {
    "name": "ec2",
    "backend": "ec2",
    "regions": ["us-east-1"],
    "model": {"id": "google/gemma-4-E2B-it", "served_name": "g", "build": "fp16",
              "precision": "fp16"},
    "ec2": {"instance_types": ["g5g.2xlarge"]},
}


def with_(base: dict, path: str, value) -> dict:
    """A deep copy of `base` with the dotted `path` set to `value` (None deletes it)."""
    data = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is None:
        del node[leaf]
    else:
        node[leaf] = value
    return data


def error_of(data: dict) -> ExperimentError:
    with pytest.raises(ExperimentError) as info:
        parse(data, "experiments/x.toml")
    return info.value


def test_shipped_experiments_are_valid_and_cover_the_seeds(experiments):
    by_name = {e.name: e for e in experiments}
    builds = {(e.backend, e.model.build, e.instance_types[:1]) for e in experiments}
    for backend, build, first_type in [
        ("sagemaker", "bf16", ("ml.g6.xlarge",)),
        ("sagemaker", "qat-w4a16", ("ml.g6.xlarge",)),
        ("sagemaker", "emb4", ("ml.g6.xlarge",)),
        ("ec2", "emb4", ("g6.xlarge",)),
        ("ec2", "fp16", ("g5g.2xlarge",)),
        ("ec2", "neuron-optb", ("inf2.xlarge",)),
        ("ec2", "neuron-optb", ("trn1.2xlarge",)),
        ("bedrock", "managed", ()),
        ("local", "q4_k_m", ()),
    ]:
        assert (backend, build, first_type) in builds
    assert by_name["nova-micro-bedrock"].bedrock.model_id == "us.amazon.nova-micro-v1:0"
    assert by_name["e2b-neuron-inf2"].ec2.engine_port == 8080


def test_valid_minimal_files_get_defaults():
    sm = parse(SAGEMAKER, "x.toml")
    assert sm.sagemaker.timeouts.model_data_download_s == 1800
    assert sm.sagemaker.mode == "benchmark"
    assert sm.instance_types == ("ml.g6.xlarge", "ml.g6.2xlarge")
    assert sm.benchmark.decode_lengths == (16, 512)
    assert sm.benchmark.concurrency == (1, 4, 16)
    ec2 = parse(EC2, "x.toml")
    assert ec2.ec2.market == "on-demand"
    assert ec2.compute_dtype("g5g.2xlarge") == "float16"  # the catalog policy, via "auto"


def test_pools_sorted_by_priority_not_by_file_order():
    swapped = with_(SAGEMAKER, "sagemaker.instance_pools", [
        {"instance_type": "ml.g6.2xlarge", "priority": 2},
        {"instance_type": "ml.g6.xlarge", "priority": 1},
    ])
    assert parse(swapped, "x.toml").instance_types == ("ml.g6.xlarge", "ml.g6.2xlarge")


@pytest.mark.parametrize("data, field, words", [
    # unknown field, at the top and nested
    (with_(SAGEMAKER, "colour", "red"), "colour", "unknown field"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.weight", 1),
     "sagemaker.instance_pools[0].weight", "unknown field"),
    (with_(SAGEMAKER, "model.quantisation", "x"), "model.quantisation", "unknown field"),
    # wrong types
    (with_(SAGEMAKER, "ttl_hours", "three"), "ttl_hours", "not a number"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.priority", "1"),
     "sagemaker.instance_pools[0].priority", "not an integer"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.priority", True),
     "sagemaker.instance_pools[0].priority", "not an integer"),
    (with_(SAGEMAKER, "regions", "us-east-2"), "regions", "not a list"),
    (with_(SAGEMAKER, "model", "gemma"), "model", "must be a table"),
    # priority 6 and six pools
    (with_(SAGEMAKER, "sagemaker.instance_pools.1.priority", 6),
     "sagemaker.instance_pools[1].priority", "allowed 1 to 5"),
    (with_(SAGEMAKER, "sagemaker.instance_pools", [
        {"instance_type": t, "priority": p} for p, t in enumerate(
            ["ml.g6.xlarge", "ml.g6.2xlarge", "ml.g6.4xlarge", "ml.g6.8xlarge", "ml.g5.xlarge",
             "ml.g6e.xlarge"], start=1)]),
     "sagemaker.instance_pools", "6 entries; at most 5"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.1.priority", 1),
     "sagemaker.instance_pools", "priority 1 is used twice"),
    # bf16 on a pre-Ampere GPU
    (with_(EC2, "engine", {"dtype": "bfloat16"}), "engine.dtype",
     "bfloat16 is not native on g5g.2xlarge (NVIDIA T4G, compute capability 7.5)"),
    # empty regions, unknown region
    (with_(SAGEMAKER, "regions", []), "regions", "is empty"),
    (with_(SAGEMAKER, "regions", ["mars-north-1"]), "regions[0]", "not a region"),
    (with_(SAGEMAKER, "regions", ["us-east-2", "us-east-2"]), "regions", "twice"),
    # instance types the catalog does not know, or of the wrong kind
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.instance_type", "ml.p9.huge"),
     "sagemaker.instance_pools[0].instance_type", "unknown SageMaker hosting instance type"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.instance_type", "g6.xlarge"),
     "sagemaker.instance_pools[0].instance_type", "start with 'ml.'"),
    (with_(SAGEMAKER, "sagemaker.instance_pools.0.instance_type", "ml.g5g.xlarge"),
     "sagemaker.instance_pools[0].instance_type", "unknown SageMaker hosting instance type"),
    (with_(EC2, "ec2.instance_types", ["g7.mega"]), "ec2.instance_types[0]",
     "unknown EC2 instance type"),
    # other mistakes users make
    (with_(SAGEMAKER, "backend", "ollama"), "backend", "allowed: sagemaker, ec2"),
    (with_(SAGEMAKER, "name", "Has Spaces"), "name", "lower-case"),
    (with_(SAGEMAKER, "model.served_name", None), "model.served_name", "is required"),
    (with_(SAGEMAKER, "model.precision", "fp4"), "model.precision", "allowed: bf16"),
    (with_(SAGEMAKER, "ec2", {"instance_types": ["g6.xlarge"]}), "ec2",
     "backend is 'sagemaker'"),
    (with_(SAGEMAKER, "sagemaker.volume_size_gb", 100), "sagemaker.volume_size_gb",
     "local NVMe"),
    (with_(SAGEMAKER, "sagemaker.timeouts", {"model_data_download_s": 10}),
     "sagemaker.timeouts.model_data_download_s", "allowed 60 to 3600"),
    (with_(SAGEMAKER, "sagemaker.timeouts", {"variant_instance_provision_s": 120}),
     "sagemaker.timeouts.variant_instance_provision_s", "allowed 300 to 3600"),
    (with_(SAGEMAKER, "engine", {"gpu_memory_utilization": 1.5}),
     "engine.gpu_memory_utilization", "out of range"),
    (with_(SAGEMAKER, "engine", {"extra_flags": {"--max-num-seqs": 4}}),
     "engine.extra_flags.--max-num-seqs", "without the leading '--'"),
    (with_(SAGEMAKER, "benchmark", {"decode_lengths": [512, 16]}),
     "benchmark.decode_lengths", "short < long"),
    (with_(EC2, "ec2.ami", "neuron"), "ec2.ami", "does not fit g5g.2xlarge"),
    ({"name": "loc", "backend": "local", "regions": ["us-east-1"],
      "model": SAGEMAKER["model"]}, "regions", "not used by backend 'local'"),
])
def test_bad_input_gets_one_clear_line(data, field, words):
    err = error_of(data)
    line = str(err)
    assert err.field_path == field
    assert line.startswith(f"experiments/x.toml: {field}: ")
    assert words in line
    assert "\n" not in line


def test_volume_size_is_allowed_where_the_type_has_no_nvme():
    data = with_(SAGEMAKER, "sagemaker.instance_pools",
                 [{"instance_type": "ml.inf2.xlarge", "priority": 1}])
    data["sagemaker"]["volume_size_gb"] = 64
    assert parse(data, "x.toml").sagemaker.volume_size_gb == 64


def test_load_checks_file_name_and_toml(tmp_path):
    bad_toml = tmp_path / "broken.toml"
    bad_toml.write_text('name = "broken"\nbackend = \n')
    with pytest.raises(ExperimentError, match=r"broken.toml: -: not valid TOML"):
        experiment.load(bad_toml)
    renamed = tmp_path / "other-name.toml"
    renamed.write_text(_toml(SAGEMAKER))
    with pytest.raises(ExperimentError, match=r"other-name.toml: name: 'sm' must match"):
        experiment.load(renamed)


def test_find_lists_known_names(tmp_path):
    (tmp_path / "sm.toml").write_text(_toml(SAGEMAKER))
    assert experiment.find(tmp_path, "sm").name == "sm"
    with pytest.raises(ExperimentError, match=r"no experiment 'nope'; known: sm"):
        experiment.find(tmp_path, "nope")


def test_snapshot_round_trips_to_json_ready_dict():
    snap = parse(SAGEMAKER, "x.toml").to_dict()
    assert snap["sagemaker"]["instance_pools"][0] == {"instance_type": "ml.g6.xlarge",
                                                     "priority": 1}
    assert snap["regions"] == ("us-east-2", "us-east-1")
    assert "source" not in snap  # the checkout's path must not leak into templates


def test_every_shipped_experiment_comes_back_from_its_snapshot(experiments):
    """The workflow rebuilds the experiment from the JSON snapshot in SSM."""
    for exp in experiments:
        snapshot = json.loads(json.dumps(exp.to_dict()))
        assert experiment.from_snapshot(snapshot, "ssm") == dataclasses.replace(exp,
                                                                               source="ssm")


def test_a_bad_snapshot_fails_like_a_bad_file():
    snap = json.loads(json.dumps(parse(SAGEMAKER, "x.toml").to_dict()))
    snap["sagemaker"]["instance_pools"][0]["priority"] = 6
    with pytest.raises(ExperimentError, match=r"^ssm: sagemaker.instance_pools\[0\].priority"):
        experiment.from_snapshot(snap, "ssm")


def _toml(data: dict) -> str:
    """Minimal TOML writer for the test fixtures (tomllib reads, it does not write)."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{key} = {_value(value)}")
    for name, table in tables:
        lines.append(f"[{name}]")
        for key, value in table.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                for item in value:
                    lines.append(f"[[{name}.{key}]]")
                    lines += [f"{k} = {_value(v)}" for k, v in item.items()]
            else:
                lines.append(f"{key} = {_value(value)}")
    text = "\n".join(lines) + "\n"
    assert tomllib.loads(text) == data  # the writer must be faithful for these fixtures
    return text


def _value(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("base,path,value", [
    (EC2, "model.served_name", "g\nENGINE\ntouch /tmp/pwned"),
    (EC2, "model.id", "google/gemma\r"),
    (EC2, "ec2.engine_image", "vllm/vllm-openai:v0.30.0\x00"),
    (EC2, "model.build", "fp16\x1b[31m"),
    (EC2, "description", "two\nlines"),
    (EC2, "ec2.instance_types", ["g5g.2xlarge\n"]),
    (SAGEMAKER, "sagemaker.image_tag", "0.30.0\x85"),
    (SAGEMAKER, "engine", {"tool_call_parser": "gemma4\t"}),
    (SAGEMAKER, "engine", {"extra_flags": {"chat-template": "x\ny"}}),
])
def test_control_characters_are_refused_in_every_string(base, path, value):
    err = error_of(with_(base, path, value))
    assert "control character" in str(err) and "\n" not in str(err)


@pytest.mark.parametrize("base,path,value", [
    (SAGEMAKER, "ttl_hours", float("nan")),
    (SAGEMAKER, "ttl_hours", float("inf")),
    (SAGEMAKER, "engine", {"gpu_memory_utilization": float("nan")}),
    (SAGEMAKER, "engine", {"extra_flags": {"swap-space": float("-inf")}}),
])
def test_non_finite_numbers_are_refused(base, path, value):
    assert "not a finite number" in str(error_of(with_(base, path, value)))


def test_nan_in_a_toml_file_is_one_line(tmp_path):
    path = tmp_path / "nanny.toml"
    path.write_text('name = "nanny"\nbackend = "local"\nttl_hours = nan\n[model]\nid = "x"\n'
                    'served_name = "x"\nbuild = "x"\nprecision = "bf16"\n')
    with pytest.raises(ExperimentError, match=r"nanny.toml: ttl_hours: nan is not a finite"):
        experiment.load(path)


def test_an_engine_image_without_a_registry_is_refused_in_one_line(tmp_path):
    """A bare name is Docker Hub's library/ namespace: the instance would fail to pull it
    and bill while the run waits (experiments/e2b-fp16-g5g.toml once named one)."""
    import re

    from runners import experiment as schema

    source = (EXPERIMENTS_DIR / "e2b-fp16-g5g.toml").read_text()
    for image, ok in [("vllm-sm75:0.27.2rc0", False), ("vllm/vllm-openai", False),
                      ("vllm/vllm-openai:v0.30.0", True),
                      ("123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-sm75:0.27.2rc0", True),
                      ("public.ecr.aws/neuron/vllm@sha256:" + "0" * 64, True)]:
        path = tmp_path / "e2b-fp16-g5g.toml"
        path.write_text(re.sub(r'engine_image = ".*"', f'engine_image = "{image}"', source))
        if ok:
            assert schema.load(path).ec2.engine_image == image
            continue
        with pytest.raises(schema.ExperimentError) as caught:
            schema.load(path)
        message = str(caught.value)
        assert message.startswith(f"{path}: ec2.engine_image: {image!r} names no registry")
        assert "\n" not in message


def test_the_shipped_g5g_experiment_names_an_ecr_image():
    from runners import experiment as schema
    from runners.providers.ec2.user_data import ecr_image

    exp = schema.load(EXPERIMENTS_DIR / "e2b-fp16-g5g.toml")
    assert ecr_image(exp.ec2.engine_image) is not None
