"""The rooms of runners/ import one way (runners/__init__.py): every import in the code,
at module level or inside a function, is read from the source and checked against the
rules, so a new line that reaches across a wall fails here with the file and the line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# room -> what it must never import (a prefix of a dotted module name).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "runners": ("aws_cdk", "constructs", "cdk_nag", "benchstack_constructs", "stacks",
                "benchstack_repack", "benchstack_mcp"),
    "runners.measure": ("runners.providers", "runners.results", "runners.workflow",
                        "runners.watchdog", "runners.checks", "runners.cli", "boto3", "botocore"),
    "runners.backends": ("runners.measure", "runners.providers", "runners.results",
                         "runners.workflow", "runners.watchdog", "runners.checks", "runners.cost",
                         "runners.cli", "runners.run_context"),
    "runners.cost": ("runners.measure", "runners.providers", "runners.results",
                     "runners.workflow", "runners.watchdog", "runners.checks", "runners.cli",
                     "runners.backends", "runners.run_context"),
    "runners.providers": ("runners.results", "runners.cli", "runners.workflow",
                          "runners.measure", "runners.watchdog", "runners.run_context"),
    "runners.checks": ("runners.providers", "runners.results", "runners.workflow",
                       "runners.measure", "runners.watchdog", "runners.cli"),
    "runners.results": ("runners.providers", "runners.workflow", "runners.watchdog",
                        "runners.cli", "runners.checks"),
    "runners.watchdog": ("runners.measure", "runners.results", "runners.providers",
                         "runners.workflow", "runners.checks", "runners.cost",
                         "runners.backends", "runners.run_context"),
    "runners.telemetry": ("runners.providers", "runners.results", "runners.workflow",
                          "runners.cli", "runners.measure", "runners.watchdog",
                          "runners.checks", "runners.run_context"),
    # The stacks wire constructs: they may use the CDK core (Stack, Tags, CfnOutput, ...)
    # but no service module, which would mean defining resources in a stack.
    "stacks": ("aws_cdk.aws_",),
}
# A module may read the names other rooms define, where its job is to check them:
# doctor looks for what the stacks publish (workflow's parameters, the SageMaker and EC2
# names, the watchdog's regions) before anything runs.
NAME_READERS: dict[str, tuple[str, ...]] = {
    "runners.checks.doctor": ("runners.workflow.execution", "runners.providers.sagemaker.names",
                              "runners.providers.ec2.fleet", "runners.providers.ec2.ami",
                              "runners.providers.ec2.user_data", "runners.watchdog.sweep"),
}
# The modules every room shares sit at the top of runners/ and import only each other.
SHARED = ("runners.experiment", "runners.hardware", "runners.regions", "runners.tags",
          "runners.progress", "runners.code_digest")
TOP_LEVEL_LIMIT = 12


def _reads_names(module: str, name: str) -> bool:
    """`name` is (in) one of the modules `module` may read names from, or a package on
    the way to one (`from runners.providers.ec2 import fleet`)."""
    allowed = NAME_READERS.get(module, ())
    return any(matches(name, a) or a.startswith(name + ".") for a in allowed)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) for every import, `from a import b` giving a.b as well as a,
    so `from runners import providers` counts as importing runners.providers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def rules_for(module: str) -> tuple[str, ...]:
    forbidden: tuple[str, ...] = ()
    for room, banned in FORBIDDEN.items():
        if module == room or module.startswith(room + "."):
            forbidden += banned
    if module in SHARED:
        forbidden += tuple(f"runners.{room}" for room in
                           ("measure", "backends", "providers", "checks", "results", "cost",
                            "workflow", "watchdog", "run_context", "cli"))
    return forbidden


def matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix if prefix.endswith("_") else prefix + ".")


SOURCES = sorted(p for d in ("runners", "stacks") for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_one_way(path: Path):
    module = module_name(path)
    crossings = [f"{path.relative_to(ROOT)}:{line}: {module} imports {name} ({prefix} is off limits)"
                 for line, name in imports_of(path)
                 for prefix in rules_for(module) if matches(name, prefix)
                 and not name.startswith(module) and not _reads_names(module, name)]
    assert not crossings, "\n".join(crossings)


def test_rules_catch_a_crossing(tmp_path):
    """The checker itself: a measurement module importing a provider is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from runners.providers.ec2 import provider\n")
    names = [name for _, name in imports_of(bad)]
    assert any(matches(n, p) for n in names for p in rules_for("runners.measure.phases"))
    assert not any(matches(n, p) for n in names for p in rules_for("runners.workflow.phases"))


def test_top_of_runners_stays_small():
    top = sorted(p.name for p in (ROOT / "runners").glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, top
    assert not [n for n in top if n.startswith(("watchdog_", "ec2_", "sagemaker_"))], top


def test_every_room_says_what_it_owns_and_may_import():
    for init in sorted((ROOT / "runners").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc, f"{init.relative_to(ROOT)} has no docstring"
        if init.parent.parent.name == "runners":  # the rooms directly under runners/
            assert "May import" in doc, f"{init.relative_to(ROOT)} does not say what it may import"
