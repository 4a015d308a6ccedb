"""The app's templates, resolved for one test account (tests/iam/policy.py)."""

from __future__ import annotations

import pytest

from tests.iam import policy


@pytest.fixture(scope="session")
def resolved(assembly) -> policy.Templates:
    return policy.load(assembly)
