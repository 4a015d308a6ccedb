"""Command line: `python -m runners <command>`.

User mistakes (a bad experiment file, an unknown name) print one line and exit 2;
they never print a traceback.

`run` exits 0 when every phase did its work; 1 when provision, await_ready or another phase
failed; 3 when a measuring phase sent requests and not one succeeded; 4 when teardown failed
(the resource may still bill); 130 when Ctrl-C, SIGTERM or SIGHUP stopped it (after its
teardown); 2 for a user mistake or a store that cannot take a write, before anything starts.
Every non-zero status comes with one line saying why.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from runners import experiment, progress, providers
from runners.results import report
from runners.results.store import CorruptFile, LocalStore, StoreUnusable, open_store
from runners.workflow import phases

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
    from runners.providers.ec2.user_data import EngineLaunch, launch_values_file, render

    launch = EngineLaunch(exp, itype, args.cache_bucket)
    print(launch_values_file(launch) if args.values else render(launch), end="")
    return 0


def _cmd_preflight(args: argparse.Namespace) -> int:
    from runners.checks import preflight  # only this command reads the Hub

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


def _cmd_doctor(args: argparse.Namespace) -> int:
    from runners.checks import doctor  # needs boto3 and credentials; list/validate do not

    exp = experiment.find(args.experiments, args.experiment) if args.experiment else None
    checks = doctor.run_checks(exp, args.region)
    for check in checks:
        print(check.line())
    return doctor.exit_code(checks)


def _cmd_start(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from runners.workflow import start  # needs boto3 and credentials; list/validate do not

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


def _cmd_engine_log(args: argparse.Namespace) -> int:
    from runners.telemetry import engine_log

    path = Path(args.file)
    text = path.read_text(encoding="utf-8", errors="replace")
    facts = engine_log.parse(engine_log.read_file_items(text), f"engine log: {path}")
    if not facts["engine"]:
        print(f"error: {path}: no vLLM or llama.cpp line in a known format", file=sys.stderr)
        return 2
    if not args.stats:
        facts["stats"] = engine_log.stats_summary(facts["stats"])
    print(json.dumps(facts, indent=2, default=str))
    return 0


def _cmd_watchdog(args: argparse.Namespace) -> int:
    from runners.watchdog import cli as watchdog_cli

    return watchdog_cli.run(args)


class ProgressLine:
    """One status line on stderr: phase i/N, what it is doing, requests done."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.tty = stream, stream.isatty()
        self.started = time.monotonic()
        self.phase = None

    def __call__(self, event: dict) -> None:
        name = event["phase"]
        index = phases.PHASES.index(name) + 1 if name in phases.PHASES else "-"
        count = f" {event['done']}/{event['total']}" if event["total"] else ""
        text = (f"[{index}/{len(phases.PHASES)}] {name:<11} {event['message']}{count}"
                f"  ({time.monotonic() - self.started:.0f} s)")
        try:
            if self.tty:
                self.stream.write("\r\033[K" + text)
            elif name != self.phase:  # a log file gets one line per phase
                self.stream.write(text + "\n")
            self.stream.flush()
        except OSError:  # the terminal closed (SIGHUP): the run goes on without it
            self.tty = False
        self.phase = name

    def close(self) -> None:
        if self.tty:
            try:
                self.stream.write("\n")
            except OSError:
                pass


def _experiment_file(args: argparse.Namespace) -> Path:
    path = Path(args.experiment)
    if path.suffix == ".toml" or path.exists():
        experiment.load(path)  # validate now: a bad file is one line, before anything starts
        return path
    return Path(experiment.find(args.experiments, args.experiment).source)


def _print_summary(summary: dict, where: str) -> None:
    print(report.compare_table([summary]), end="")
    for lvl in summary["load"]:
        lat = lvl["latency_s"]
        name = (f"{lvl['target_rate']:g}/s" if lvl.get("target_rate")
                else f"c={lvl['concurrency']}")
        print(f"  load {name}: "
              f"{lvl['tokens_per_s'] or 0:.1f} tokens/s, {lvl['requests']} requests, "
              f"{lvl['errors']} errors, {lvl['throttles']} throttles"
              + (f", latency p50 {lat['p50']:.3f} s" if lat else ""))
    print(f"run folder: {where}")


def _run_once(path: Path, store_location: str) -> tuple[int, str | None]:
    """One run of the experiment: (exit code, summary.json location or None)."""
    from runners.workflow import driver  # imports the phases' dependencies only when running

    line = ProgressLine()
    stop = progress.listen(line)
    try:
        outcome = driver.run_experiment(str(path), store_location)
    except StoreUnusable as exc:
        print(f"error: store {exc}; nothing was started", file=sys.stderr)
        return 2, None
    finally:
        stop()
        line.close()
    verdict = driver.verdict(outcome)
    try:
        return _report_run(outcome, verdict)
    except OSError:  # the terminal went away (SIGHUP): the run folder has everything
        return verdict[0], None


def _report_run(outcome: dict, verdict: tuple[int, str | None]) -> tuple[int, str | None]:
    """Print what the run left; (exit code, summary.json location or None)."""
    context = outcome["context"]
    store = open_store(context["store"])
    where = store.uri(context["run_prefix"])
    for r in outcome["results"]:
        if r["state"] == "failed":
            print(f"phase {r['phase']} failed: {r.get('error') or 'see ' + str(r['key'])}",
                  file=sys.stderr)
    if outcome.get("store_fallback"):
        print(outcome["store_fallback"], file=sys.stderr)
    try:
        summary = store.get_json_or_none(context["run_prefix"] + "summary.json")
    except Exception as exc:  # a store that failed after the run: the verdict still stands
        summary = None
        print(f"summary not readable from {where}: {type(exc).__name__}: {exc}",
              file=sys.stderr)
    if summary:
        _print_summary(summary, where)
    code, reason = verdict
    if code == 130:
        print(f"interrupted ({outcome['signal']}): the engine was stopped; partial results in "
              f"{where}", file=sys.stderr)
    elif reason:
        print(f"exit {code}: {reason}", file=sys.stderr)
    return code, (store.uri(context["run_prefix"] + "summary.json") if summary else None)


def _print_group(summary_paths: list[str]) -> None:
    """The repeated runs' figures: median, 95% interval and n (runners/results/groups.py)."""
    from runners.results import compare, groups

    local = [Path(p) for p in summary_paths if not p.startswith("s3://")]
    if len(local) < len(summary_paths):  # compare reads local folders: copy S3 runs down first
        print("runs in S3: " + " ".join(p for p in summary_paths if p.startswith("s3://")))
    rows = [compare.row(compare.load_summary(p), p) for p in local]
    print("\n\n".join(groups.markdown(groups.group(rows))))
    if local:
        folders = " ".join(str(p.parent) for p in local)
        print(f"compare them: python -m runners compare {folders}")


def _cmd_run(args: argparse.Namespace) -> int:
    path = _experiment_file(args)
    backend = experiment.load(path).backend
    if backend not in providers.REGISTRY:
        raise experiment.ExperimentError(str(path), "backend", f"{backend!r} has no runner "
                                         f"yet; runnable: {', '.join(providers.REGISTRY)}")
    if args.repeat < 1:
        print(f"error: --repeat: {args.repeat} runs; give 1 or more", file=sys.stderr)
        return 2
    codes, summaries = [], []
    for i in range(args.repeat):
        if args.repeat > 1:
            print(f"run {i + 1} of {args.repeat}", file=sys.stderr)
        code, summary = _run_once(path, str(args.store))
        codes.append(code)
        summaries += [summary] if summary else []
        if code in (2, 130):  # an unusable store or a signal: no further runs
            return code
    if len(summaries) > 1:
        _print_group(summaries)
    return max(codes)


def _run_store(run_dir: str) -> LocalStore:
    path = Path(run_dir)
    if not (path / "manifest.json").is_file():
        raise experiment.ExperimentError(run_dir, "-", "not a run folder (no manifest.json)")
    return LocalStore(path)


def _cmd_report(args: argparse.Namespace) -> int:
    store = _run_store(args.run_dir)
    out = report.write_report(store, "", live_to_side=True)
    print(out["markdown"], end="")
    if out["partial_prefix"]:
        print(f"run still going (no teardown.json yet): partial report in "
              f"{store.uri(out['partial_prefix'])}; the run's own report will write "
              "summary.json and report.md", file=sys.stderr)
    elif out["kept"]:
        print(f"(kept as first written: {', '.join(out['kept'])})", file=sys.stderr)
    if args.open:
        import webbrowser

        page = Path(store.uri(f"{out['partial_prefix'] or ''}report.html")).resolve()
        webbrowser.open(page.as_uri())
        print(f"opened {page}", file=sys.stderr)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from runners.results import compare
    from runners.cost.prices import PricesFileError

    out_dir = args.out or Path("runs") / "compare" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        out = compare.compare(args.run_dirs, args.baseline, out_dir)
    except (compare.CompareError, PricesFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(out["markdown"].read_text(encoding="utf-8"), end="")
    print(f"written: {out['markdown']}, {out['csv']}"
          + (f", {len(out['charts'])} charts" if out["charts"] else
             f" (charts skipped: {out['charts_skipped']})"), file=sys.stderr)
    return 0


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
    user_data.add_argument("--values", action="store_true",
                           help="print the values file the script decodes, not the script")
    user_data.set_defaults(func=_cmd_user_data)
    check = sub.add_parser("preflight", help="check a vLLM experiment's model against its "
                                             "hardware (reads headers from the Hugging Face Hub)")
    check.add_argument("experiment", help="experiment name")
    check.set_defaults(func=_cmd_preflight)
    doc = sub.add_parser("doctor", help="is the account ready? bootstrap, stacks, quotas, "
                                        "images, AMIs, model access, watchdog: one line each")
    doc.add_argument("experiment", nargs="?", help="experiment name (default: the account "
                                                   "and the region's shared stacks only)")
    doc.add_argument("--region", help="one region (default: the experiment's regions)")
    doc.set_defaults(func=_cmd_doctor)
    begin = sub.add_parser("start", help="start a benchmark run in the cloud workflow")
    begin.add_argument("experiment", help="experiment name (deployed with its stacks)")
    begin.add_argument("--region", help="region to start in (default: the experiment's "
                                         "first); its other regions are the fallbacks")
    begin.set_defaults(func=_cmd_start)
    elog = sub.add_parser("engine-log", help="read a vLLM or llama.cpp log (plain, CloudWatch "
                                             "prefixed, or FilterLogEvents JSON): print the "
                                             "engine's start-up facts as JSON")
    elog.add_argument("file")
    elog.add_argument("--stats", action="store_true",
                      help="list every periodic stats line (default: a summary)")
    elog.set_defaults(func=_cmd_engine_log)
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
    run = sub.add_parser("run", help="run every benchmark phase of one experiment")
    run.add_argument("experiment", help="experiment name (in --experiments) or a .toml file")
    run.add_argument("--store", default=".", help="where runs/ is written: a folder "
                     "(default: the current folder) or s3://bucket[/prefix]")
    run.add_argument("--repeat", type=int, default=1, metavar="N",
                     help="run it N times in a row, each its own run folder; prints the "
                          "median, 95%% interval and n of every figure (compare groups them)")
    run.set_defaults(func=_cmd_run)
    rep = sub.add_parser("report", help="(re)write the report of a run folder")
    rep.add_argument("run_dir")
    rep.add_argument("--open", action="store_true",
                     help="open report.html (one self-contained page) in the web browser")
    rep.set_defaults(func=_cmd_report)
    cmp_ = sub.add_parser("compare", help="one table across runs: speed, $ per 1M tokens, "
                                          "break-even, ratios to a baseline")
    cmp_.add_argument("run_dirs", nargs="+", help="run folders, or folders holding runs")
    cmp_.add_argument("--baseline", help="run id, experiment or folder name (default: the "
                                         "fastest run)")
    cmp_.add_argument("--out", type=Path, help="output folder (default: "
                                                "runs/compare/<UTC time>); never overwritten")
    cmp_.set_defaults(func=_cmd_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except experiment.ExperimentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # A path the user named that is missing, a folder, or unreadable: one line.
    except (json.JSONDecodeError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            PermissionError, CorruptFile) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
