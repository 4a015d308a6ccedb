"""The runner functions' asset, built locally without Docker: runners/ plus the pinned
AWS SDK (boto3, botocore and what they need), copied from this environment's installed
distributions, which are pure Python.

Lambda's own boto3 may predate fields the runners depend on (runners/sdk.py); the asset's
copy comes first on Lambda's path (the function's code directory precedes the runtime's),
so the code in Lambda runs on the SDK the tests ran on. A version that differs from
requirements.txt stops the synth in one line instead of shipping something untested.
"""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

import jsii
from aws_cdk import ILocalBundling

REPO_ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = REPO_ROOT / "requirements.txt"
# boto3 and its run-time requirements (no extras), all pure Python; a test checks that the
# list is closed under the installed metadata.
SDK_DISTRIBUTIONS = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six",
                     "urllib3")
PINNED = ("boto3", "botocore")  # must match requirements.txt exactly
_SKIP_PARTS = ("__pycache__",)
_SKIP_SUFFIXES = (".pyc", ".sh")


class BundleError(RuntimeError):
    """The asset cannot be built as pinned."""


def pins(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    found = {}
    for line in requirements.read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            found[name.strip().lower()] = version.strip()
    return found


def check_pins(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """{distribution: installed version}; raises BundleError when a pinned one differs."""
    wanted = pins(requirements)
    installed = {}
    for name in SDK_DISTRIBUTIONS:
        try:
            installed[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            raise BundleError(f"runner asset: {name} is not installed; run ./dev test to "
                              "install requirements.txt") from None
    for name in PINNED:
        if wanted.get(name) != installed[name]:
            raise BundleError(f"runner asset: {name} {installed[name]} is installed but "
                              f"requirements.txt pins {wanted.get(name, 'nothing')}; "
                              "reinstall the requirements")
    return installed


def _copy_distribution(name: str, out: Path) -> int:
    dist = importlib.metadata.distribution(name)
    copied = 0
    for entry in dist.files or []:
        parts = Path(entry).parts
        if parts[0] == ".." or any(p in _SKIP_PARTS for p in parts) or \
                str(entry).endswith(_SKIP_SUFFIXES):
            continue  # console scripts, caches
        source = Path(dist.locate_file(entry))
        if source.is_file():
            target = out / entry
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied += 1
    return copied


def _ignore(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n.startswith(".") or n in _SKIP_PARTS or
            n.endswith(_SKIP_SUFFIXES)]


def bundle(out: Path) -> None:
    """runners/ (without caches, dot files and the EC2 boot script, which is rendered at
    synth) and the SDK distributions, into `out`."""
    check_pins()
    shutil.copytree(REPO_ROOT / "runners", out / "runners", ignore=_ignore,
                    dirs_exist_ok=True)
    for name in SDK_DISTRIBUTIONS:
        _copy_distribution(name, out)


@jsii.implements(ILocalBundling)
class LocalBundling:
    """CDK's local bundling hook: always bundles here, so Docker is never asked for."""

    def try_bundle(self, output_dir: str, _options=None) -> bool:
        bundle(Path(output_dir))
        return True


# One instance for every function: CDK caches a bundle per source and options, and a new
# object per call would bundle again for each function.
LOCAL = LocalBundling()
