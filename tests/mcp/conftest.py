"""The runner tests' loopback server fixture, shared with the MCP tests."""

from tests.runners.conftest import loopback  # noqa: F401 - a pytest fixture
