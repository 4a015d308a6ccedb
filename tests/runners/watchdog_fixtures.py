"""Fixtures for the watchdog tests: moto with fake credentials, a fresh account per test.

The test modules import them by name, so tests/runners needs neither a conftest.py (other
runners' tests may bring their own) nor an __init__.py (which would make pytest import this
folder as `runners`, shadowing the real package)."""

from __future__ import annotations

import pytest


@pytest.fixture
def aws(monkeypatch):
    from moto import mock_aws

    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with mock_aws():
        yield


@pytest.fixture
def world(aws):
    from tests.runners.watchdog_world import World

    return World()
