#!/usr/bin/env python3
"""Watchdog sweep benchmark against moto: 1,000 tagged resources over three regions, with
untagged and unexpired ones mixed in.

Shows, with figures printed:
- one deleting sweep finishes within the Lambda's time limit (runners.watchdog.lambda_handler),
- it deletes exactly the expired set and nothing else,
- it makes O(resources) API calls (counted with a botocore before-call hook), and
- the time ratio of parallel regions (thread pool) to sequential, side by side.

moto runs in-process, so a call costs CPU rather than a network round trip and threads
contend for the GIL; `--latency-ms` adds a sleep per call (a stand-in for the round trip
to a real endpoint) so the parallel/sequential ratio is also shown where the wait, not
the CPU, dominates. moto rejects ml.g6.* for SageMaker, so endpoints use ml.g4dn.xlarge;
EC2 instances and fleets use g6.xlarge, which moto 5.2.5 accepts.

    .venv/bin/python benchmarks/watchdog_sweep.py [--resources 1000] [--latency-ms 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
    os.environ.pop(key, None)
os.environ.update(AWS_ACCESS_KEY_ID="benchmark", AWS_SECRET_ACCESS_KEY="benchmark",
                  AWS_DEFAULT_REGION="us-east-2", AWS_EC2_METADATA_DISABLED="true")

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from runners.watchdog import sweep as watchdog  # noqa: E402
from runners.watchdog.clients import Clients  # noqa: E402
from runners.watchdog.lambda_handler import TIMEOUT_S  # noqa: E402
from tests.runners.watchdog_world import (EXPIRED, NOW, REGIONS, UNEXPIRED, World,  # noqa: E402
                                          run_tags)

# A repeating mix per region: (what, expired?). An endpoint is 3 tagged resources
# (endpoint, config, model); a fleet is 2 (the fleet and its instance).
MIX = [("endpoint", True), ("endpoint", False), ("instance", True), ("instance", True),
       ("instance", False), ("fleet", True), ("instance", True), ("fleet", False)]
TAGGED_PER = {"endpoint": 3, "instance": 1, "fleet": 2}
UNTAGGED_SHARE = 0.1  # one untagged resource (that looks expired) per ten tagged


def build_world(total_tagged: int) -> tuple[World, dict[str, set], set]:
    """Creates the resources; returns the world, what must be deleted (by region: endpoint
    names and instance/fleet ids) and what must stay."""
    world = World()
    doomed: dict[str, set] = {region: set() for region in REGIONS}
    spared: set = set()
    made, unit = 0, 0
    while made < total_tagged:
        region = REGIONS[unit % len(REGIONS)]
        what, expired = MIX[(unit // len(REGIONS)) % len(MIX)]
        if made + TAGGED_PER[what] > total_tagged:
            what = "instance"  # fill the last few exactly
        run = f"run-{unit}"
        found = run_tags(run, EXPIRED if expired else UNEXPIRED)
        if what == "endpoint":
            world.endpoint(region, run, found)
            key = ("endpoint", run)
        elif what == "instance":
            key = ("instance", world.instance(region, found))
        else:
            key = ("fleet", world.fleet(region, found))
        (doomed[region] if expired else spared).add(key)
        made += TAGGED_PER[what]
        unit += 1
    for n in range(int(total_tagged * UNTAGGED_SHARE)):
        region = REGIONS[n % len(REGIONS)]
        untagged = run_tags(f"foreign-{n}", EXPIRED, managed=False)
        if n % 5 == 0:
            world.endpoint(region, f"foreign-{n}", untagged)
            spared.add(("endpoint", f"foreign-{n}"))
        else:
            spared.add(("instance", world.instance(region, untagged)))
    return world, doomed, spared


def remaining(world: World) -> dict[str, set]:
    left = {}
    for region in REGIONS:
        fleets = {("fleet", f) for f, state in world.fleet_states(region).items()
                  if not state.startswith("deleted")}
        left[region] = ({("endpoint", e) for e in world.endpoints(region)}
                        | {("instance", i) for i in world.live_instances(region)} | fleets)
    return left


class CallLog:
    """Counts every API call the sweep makes, by operation; optionally waits `latency_s`
    per call as a real round trip would."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.calls: Counter = Counter()

    def session(self) -> boto3.session.Session:
        session = boto3.session.Session()
        session.events.register("before-call", self._on_call)
        return session

    def _on_call(self, model, **_):
        self.calls[f"{model.service_model.service_name}:{model.name}"] += 1
        if self.latency_s:
            time.sleep(self.latency_s)


def timed_sweep(parallel: bool, *, dry_run: bool, latency_s: float):
    log = CallLog(latency_s)
    report = watchdog.sweep(REGIONS, clients=Clients(log.session()), now=NOW,
                            dry_run=dry_run, parallel=parallel,
                            run_status=lambda _tags: "RUNNING")
    return report, log


def deleting_sweep(total: int, parallel: bool, latency_s: float) -> dict:
    """A fresh world, one deleting sweep, and the check that exactly the expired set went."""
    with mock_aws():
        started = time.monotonic()
        world, doomed, spared = build_world(total)
        build_s = time.monotonic() - started
        report, log = timed_sweep(parallel, dry_run=False, latency_s=latency_s)
        left = remaining(world)
    deleted_ok = all(not (doomed[r] & left[r]) for r in REGIONS)
    untagged = int(total * UNTAGGED_SHARE)
    # an endpoint's config and model are resources of their own, as is a fleet's instance
    untagged_resources = sum(3 if n % 5 == 0 else 1 for n in range(untagged))
    spared_ok = spared <= set().union(*left.values())
    counts = report.counts()
    return {"report": report, "calls": log.calls, "build_s": build_s,
            "exact": deleted_ok and spared_ok, "deleted_ok": deleted_ok,
            "spared_ok": spared_ok, "counts": counts,
            "listed": len(report.lines), "resources": total + untagged_resources}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=1000,
                        help="tagged resources across the three regions (default 1000)")
    parser.add_argument("--latency-ms", type=float, default=30.0,
                        help="simulated round trip per API call for the ratio (default 30)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="dry-run sweep pairs for the parallel/sequential ratio")
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000

    print(f"watchdog sweep benchmark: {args.resources} tagged resources over "
          f"{', '.join(REGIONS)} (+{int(args.resources * UNTAGGED_SHARE)} untagged), "
          f"moto in-process; Lambda limit {TIMEOUT_S} s")
    print()
    print("1) one deleting sweep per mode, each on a fresh identical world (no added latency)")
    results = {}
    for parallel in (False, True):
        mode = "parallel" if parallel else "sequential"
        result = results[mode] = deleting_sweep(args.resources, parallel, 0.0)
        report, calls = result["report"], result["calls"]
        total_calls = sum(calls.values())
        print(f"   {mode:10s} sweep {report.seconds:7.2f} s (world built in "
              f"{result['build_s']:.1f} s) | {result['listed']} audit lines | "
              f"{result['counts']['deleted']} deleted, {result['counts']['kept']} kept, "
              f"{result['counts']['refused']} refused, {result['counts']['error']} errors")
        print(f"   {'':10s} API calls {total_calls} for {result['resources']} resources "
              f"({args.resources} tagged) = {total_calls / result['resources']:.2f} per "
              f"resource, {total_calls / args.resources:.2f} per tagged resource")
        print(f"   {'':10s} exact expired set deleted: {result['exact']} "
              f"(expired gone: {result['deleted_ok']}, untagged/unexpired kept: "
              f"{result['spared_ok']}) | within {TIMEOUT_S} s: {report.seconds < TIMEOUT_S}")
    by_op = results["parallel"]["calls"]
    print("   calls by operation (parallel run): " +
          ", ".join(f"{op} {n}" for op, n in sorted(by_op.items())))
    small = deleting_sweep(args.resources // 4, True, 0.0)
    small_calls = sum(small["calls"].values())
    big_calls = sum(by_op.values())
    print(f"   O(resources): {small_calls / small['resources']:.2f} calls per resource at "
          f"{small['resources']} resources, {big_calls / results['parallel']['resources']:.2f}"
          f" at {results['parallel']['resources']} (a quarter of the world, same mix)")
    ratio_raw = (results["parallel"]["report"].seconds
                 / results["sequential"]["report"].seconds)
    print(f"   parallel / sequential time (moto CPU-bound, no latency): {ratio_raw:.2f}")

    print()
    print(f"2) dry-run sweeps side by side, {args.repeats} pairs, "
          f"{args.latency_ms:g} ms simulated latency per call")
    with mock_aws():
        build_world(args.resources)
        times = {"sequential": [], "parallel": []}
        for _ in range(args.repeats):
            for parallel in (False, True):
                report, _log = timed_sweep(parallel, dry_run=True, latency_s=latency_s)
                times["parallel" if parallel else "sequential"].append(report.seconds)
    seq, par = statistics.median(times["sequential"]), statistics.median(times["parallel"])
    print(f"   sequential median {seq:.2f} s  {[round(t, 2) for t in times['sequential']]}")
    print(f"   parallel   median {par:.2f} s  {[round(t, 2) for t in times['parallel']]}")
    print(f"   parallel / sequential time: {par / seq:.2f} (3 regions: 0.33 is the floor)")

    ok = all(r["exact"] and r["report"].seconds < TIMEOUT_S
             for r in [*results.values(), small])
    print()
    print("PASS" if ok else "FAIL: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
