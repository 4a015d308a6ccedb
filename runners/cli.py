"""Command line: `python -m runners <command>`.

User mistakes (a bad experiment file, an unknown name) print one line and exit 2;
they never print a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runners import experiment

EXPERIMENTS_DIR = Path(__file__).resolve().parent.parent / "experiments"


def _cmd_list(args: argparse.Namespace) -> int:
    experiments = experiment.load_all(args.experiments)
    rows = [("NAME", "BACKEND", "MODEL BUILD", "REGIONS", "INSTANCE TYPES")]
    rows += [
        (e.name, e.backend, f"{e.model.build} ({e.model.precision})",
         ",".join(e.regions) or "-", ",".join(e.instance_types) or "-")
        for e in experiments
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.files] or experiment.experiment_files(args.experiments)
    if not paths:
        print(f"{args.experiments}: no *.toml experiment files", file=sys.stderr)
        return 2
    bad = 0
    for path in paths:
        try:
            exp = experiment.load(path)
        except experiment.ExperimentError as exc:
            bad += 1
            print(f"error  {exc}", file=sys.stderr)
        else:
            print(f"ok     {path}  ({exp.backend})")
    print(f"{len(paths) - bad} valid, {bad} invalid")
    return 2 if bad else 0


def _cmd_watchdog(args: argparse.Namespace) -> int:
    from runners import watchdog_cli

    return watchdog_cli.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners", description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=Path, default=EXPERIMENTS_DIR,
                        help="folder of experiment TOML files (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list every experiment").set_defaults(func=_cmd_list)
    validate = sub.add_parser("validate", help="validate experiment files (all by default)")
    validate.add_argument("files", nargs="*", help="experiment files; default: all")
    validate.set_defaults(func=_cmd_validate)
    watchdog = sub.add_parser(
        "watchdog", help="sweep regions for expired benchstack resources (the Lambda's code)")
    watchdog.add_argument("--dry-run", action="store_true",
                          help="report what would be deleted; delete nothing")
    watchdog.add_argument("--regions", default=None,
                          help="comma-separated regions (default: us-east-1,us-east-2,us-west-2)")
    watchdog.add_argument("--audit", type=Path, default=None,
                          help="write the JSON-lines audit here instead of stdout")
    watchdog.add_argument("--sequential", action="store_true",
                          help="sweep one region at a time instead of in parallel")
    watchdog.set_defaults(func=_cmd_watchdog)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except experiment.ExperimentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
