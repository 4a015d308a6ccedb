"""A snapshot of every synthesized template: any change to the infrastructure shows up
as a reviewable diff. Update with `./dev test --snapshot-update` when it is intended."""

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from runners import experiment
from tests.conftest import EXPERIMENTS_DIR
from tests.infra.templates import masked


def _stack_names() -> list[str]:
    from stacks import names

    exps = experiment.load_all(EXPERIMENTS_DIR)
    cloud = [e for e in exps if e.backend in experiment.CLOUD_BACKENDS]
    regions = sorted({r for e in cloud for r in e.regions})
    return [names.foundation(r) for r in regions] + [
        names.experiment(e.name, r) for e in cloud for r in e.regions
    ] + [names.watchdog()]


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


def test_every_stack_is_snapshotted(templates):
    assert sorted(templates) == sorted(_stack_names())


@pytest.mark.parametrize("stack_name", _stack_names())
def test_template_snapshot(templates, stack_name, snapshot_json):
    assert masked(templates[stack_name]) == snapshot_json
