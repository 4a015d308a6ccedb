"""Experiment builders for runner tests: validated through the real schema."""

from __future__ import annotations

import copy

from runners import experiment

BASE = {
    "name": "sm-test",
    "backend": "sagemaker",
    "regions": ["us-east-2", "us-east-1", "us-west-2"],
    "ttl_hours": 3,
    "model": {"id": "acme/gemma-like-w4a16", "served_name": "gemma", "build": "w4a16",
              "precision": "int4"},
    "engine": {"max_model_len": 8192, "gpu_memory_utilization": 0.9,
               "tool_call_parser": "gemma4"},
    "sagemaker": {
        "image_tag": "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.1",
        "creating_alert_minutes": 5,
        "instance_pools": [{"instance_type": "ml.g6.xlarge", "priority": 1},
                           {"instance_type": "ml.g6.2xlarge", "priority": 2}],
    },
}


def sagemaker_experiment(**changes) -> experiment.Experiment:
    """BASE with top-level keys replaced, or nested ones via "section__key" names."""
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            data.setdefault(section, {})[field] = value
        else:
            data[section] = value
    return experiment.parse(data, "experiments/sm-test.toml")
