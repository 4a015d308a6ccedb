"""The AMI an engine instance boots, by the public SSM parameter that names it.

Shared by the launch template construct (CloudFormation resolves the parameter at deploy
time: no lookup, no credentials at synth) and `python -m runners doctor`, which checks
that the parameter resolves in each region before anything bills.
"""

from __future__ import annotations

from runners import hardware

# Public SSM parameters that always name the newest AMI, resolved by CloudFormation at
# deploy time (no lookup, no credentials at synth). AWS Deep Learning AMIs on AL2023:
# the Base OSS NVIDIA driver AMI per architecture (the arm64 one supports G5g), and the
# Neuron base DLAMI (x86_64 only), which ships the Neuron driver and tools for containers.
AMI_PARAMETERS: dict[tuple[str, str], str] = {
    ("nvidia", "x86_64"):
        "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-amazon-linux-2023/"
        "latest/ami-id",
    ("nvidia", "arm64"):
        "/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-amazon-linux-2023/"
        "latest/ami-id",
    ("aws-neuron", "x86_64"): "/aws/service/neuron/dlami/base/amazon-linux-2023/latest/image_id",
}


def ami_parameter(instance_type: str) -> str:
    """The public SSM parameter naming the AMI for `instance_type`."""
    entry = hardware.lookup(instance_type)
    key = (entry.accelerator.vendor, entry.arch)
    if key not in AMI_PARAMETERS:
        raise ValueError(f"no AMI for {instance_type} ({key[0]} on {key[1]})")
    return AMI_PARAMETERS[key]
