"""cfn-lint on every template; cdk-nag AwsSolutions clean, with reasons for what is
acknowledged; and proof that the nag plugin really runs in our build."""

import json

import cfnlint.api
import pytest
from aws_cdk import App
from aws_cdk import aws_s3 as s3

from stacks.build import build
from tests.conftest import cdk_context, synth


def test_cfn_lint_is_clean_on_every_template(assembly):
    problems = []
    for stack in sorted(assembly.stacks, key=lambda s: s.stack_name):
        # each stack's own region: not every stack name ends in one (Benchstack-Watchdog)
        for match in cfnlint.api.lint(json.dumps(stack.template),
                                      regions=[stack.environment.region]):
            problems.append(f"{stack.stack_name}: {match}")
    assert problems == []


@pytest.fixture(scope="module")
def nagged(experiments, tmp_path_factory):
    """The whole app synthesized with cdk-nag on; raises if any finding is unacknowledged."""
    outdir = tmp_path_factory.mktemp("nag")
    _, assembly = synth(experiments, outdir, validate=True)
    return assembly, outdir


def test_cdk_nag_aws_solutions_is_clean(nagged):
    assembly, outdir = nagged
    report = json.loads((outdir / "validation-report.json").read_text())
    violations = [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])]
    assert violations == []
    assert assembly.stacks


def _acknowledgments(outdir) -> dict[str, str]:
    """Every acknowledged rule in the cloud assembly's metadata, with its reason."""
    acks = {}
    for path in outdir.glob("*.metadata.json"):
        for entries in json.loads(path.read_text()).values():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    acks.update(entry["data"])
    return acks


def test_every_acknowledgment_carries_a_reason(nagged):
    _, outdir = nagged
    acks = _acknowledgments(outdir)
    assert "AwsSolutions::AwsSolutions-S1" in acks  # the access-log bucket's own logging
    for rule, reason in acks.items():
        assert len(reason.strip()) > 20, rule


def test_cdk_nag_really_runs_in_our_build(experiments, tmp_path):
    """A planted unencrypted, unlogged bucket must fail synthesis."""
    app = App(outdir=str(tmp_path), context=cdk_context())
    built = build(app, [e for e in experiments if e.name == "nova-micro-bedrock"])
    s3.Bucket(built.experiments[0], "Planted")
    with pytest.raises(RuntimeError, match="AwsSolutions-S1"):
        app.synth()
