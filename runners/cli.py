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


def _cmd_user_data(args: argparse.Namespace) -> int:
    exp = experiment.find(args.experiments, args.name)
    if exp.ec2 is None:
        print(f"error: {exp.source}: backend: {exp.backend!r}; user-data is for backend "
              "'ec2'", file=sys.stderr)
        return 2
    itype = args.instance_type or exp.ec2.instance_types[0]
    if itype not in exp.ec2.instance_types:
        print(f"error: {exp.source}: ec2.instance_types: {itype!r} is not one of "
              f"{', '.join(exp.ec2.instance_types)}", file=sys.stderr)
        return 2
    # The renderer sits beside the launch template construct; it is pure Python.
    from benchstack_constructs.launch_template_user_data import EngineLaunch, render

    print(render(EngineLaunch(exp, itype, args.cache_bucket)), end="")
    return 0


def _cmd_preflight(args: argparse.Namespace) -> int:
    from runners import preflight  # only this command reads the Hub

    exp = experiment.find(args.experiments, args.experiment)
    try:
        report = preflight.run(exp)
    except preflight.PreflightError as exc:
        print(f"preflight failed: {exc}", file=sys.stderr)
        return 2
    memory = report["memory"]
    print(f"ok     {exp.model.id}: {report['tensors']} tensors, ignore list "
          f"{report['ignore_list']}")
    print(f"ok     fits {memory['instance_type']}: weights {memory['weights_gib']:.2f} GiB + KV "
          f"{memory['kv_cache_gib']:.2f} GiB (max_model_len {memory['max_model_len']}) <= "
          f"{memory['usable_gib']:.2f} GiB usable")
    for assumption in memory["assumptions"]:
        print(f"note   {assumption}")
    return 0


def _cmd_start(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from runners import start  # needs boto3 and credentials; list/validate do not

    exp = experiment.find(args.experiments, args.experiment)
    if exp.backend not in experiment.CLOUD_BACKENDS:
        print(f"error: {exp.source}: backend: {exp.backend!r} runs locally, not in the "
              "cloud workflow", file=sys.stderr)
        return 2
    region = args.region or exp.regions[0]
    if region not in exp.regions:
        print(f"error: {exp.source}: regions: {region!r} is not one of "
              f"{', '.join(exp.regions)}", file=sys.stderr)
        return 2
    try:
        started = start.start_run(exp.name, region)
    except start.StartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (BotoCoreError, ClientError) as exc:
        print(f"error: AWS in {region}: {exc}", file=sys.stderr)
        return 1
    print(start.describe(started))
    return 0


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
    user_data = sub.add_parser("user-data", help="print the boot script of an ec2 experiment's "
                                                 "launch template")
    user_data.add_argument("name", help="experiment name")
    user_data.add_argument("--instance-type", help="default: the experiment's first")
    user_data.add_argument("--cache-bucket", default="CACHE-BUCKET",
                           help="cache bucket name to show (deploy fills in the real one)")
    user_data.set_defaults(func=_cmd_user_data)
    check = sub.add_parser("preflight", help="check a vLLM experiment's model against its "
                                             "hardware (reads headers from the Hugging Face Hub)")
    check.add_argument("experiment", help="experiment name")
    check.set_defaults(func=_cmd_preflight)
    begin = sub.add_parser("start", help="start a benchmark run in the cloud workflow")
    begin.add_argument("experiment", help="experiment name (deployed with its stacks)")
    begin.add_argument("--region", help="region to start in (default: the experiment's "
                                         "first); its other regions are the fallbacks")
    begin.set_defaults(func=_cmd_start)
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
