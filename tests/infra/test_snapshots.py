"""A snapshot of every synthesized template: any change to the infrastructure shows up
as a reviewable diff. Update with `./dev test --snapshot-update` when it is intended."""

import json

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from runners import experiment
from tests.conftest import EXPERIMENTS_DIR, ROOT
from tests.infra.templates import masked


def _stack_names() -> list[str]:
    from stacks import names

    exps = experiment.load_all(EXPERIMENTS_DIR)
    cloud = [e for e in exps if e.backend in experiment.CLOUD_BACKENDS]
    regions = sorted({r for e in cloud for r in e.regions})
    return [names.foundation(r) for r in regions] + [names.benchmark(r) for r in regions] + [
        names.experiment(e.name, r) for e in cloud for r in e.regions
    ] + [names.watchdog()]


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


def test_every_stack_is_snapshotted(templates):
    assert sorted(templates) == sorted(_stack_names())


def test_templates_do_not_depend_on_the_checkout_folder(templates):
    """A path of this checkout in a template would make every snapshot fail elsewhere."""
    leaks = [name for name, t in templates.items() if str(ROOT) in json.dumps(t)]
    assert leaks == []


@pytest.mark.parametrize("stack_name", _stack_names())
def test_template_snapshot(templates, stack_name, snapshot_json):
    assert masked(templates[stack_name]) == snapshot_json
