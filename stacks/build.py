"""Builds benchstack's stacks into an App from the experiment files.

app.py calls this with the CLI's context; tests call it with an in-process App.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from runners.experiment import CLOUD_BACKENDS, Experiment, ExperimentError
from stacks.benchmark import BenchmarkStack
from stacks.experiment import ExperimentStack
from stacks.foundation import FoundationStack
from stacks.watchdog import WatchdogSettings, WatchdogStack


@dataclass
class Built:
    foundations: dict[str, FoundationStack] = field(default_factory=dict)
    benchmarks: dict[str, BenchmarkStack] = field(default_factory=dict)
    experiments: list[ExperimentStack] = field(default_factory=list)
    watchdog: WatchdogStack | None = None

    @property
    def stacks(self) -> list:
        return [*self.foundations.values(), *self.benchmarks.values(), *self.experiments,
                *([self.watchdog] if self.watchdog else [])]


def unswept(experiments: list[Experiment], watchdog: WatchdogSettings) -> None:
    """Refuse an experiment region the watchdog does not sweep: what a run leaves there
    would bill until someone notices."""
    for exp in experiments:
        missing = [r for r in exp.regions if r not in watchdog.regions]
        if missing:
            raise ExperimentError(
                exp.source, "regions",
                f"{', '.join(missing)} not swept by the watchdog (watchdog_regions: "
                f"{','.join(watchdog.regions)}); add it with -c watchdog_regions="
                f"{','.join(sorted({*watchdog.regions, *missing}))} or in cdk.json")


# AWS's documentation account: an experiment file names it where you must put yours.
EXAMPLE_ACCOUNT = "111122223333"


def placeholder_images(experiments: list[Experiment], account: str | None) -> None:
    """Refuse, when deploying (the account is known), an engine image in the example
    account: the instance could never pull it and would bill while the run waits."""
    if not account:
        return
    for exp in experiments:
        image = exp.ec2.engine_image if exp.ec2 else ""
        if image.startswith(f"{EXAMPLE_ACCOUNT}.dkr.ecr."):
            raise ExperimentError(
                exp.source, "ec2.engine_image",
                f"{image!r} is in AWS's example account {EXAMPLE_ACCOUNT}; push the image "
                f"to ECR and name it as {account}.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>")


def build(app: App, experiments: list[Experiment], *, validate: bool = True,
          account: str | None = None) -> Built:
    """Foundation and benchmark stacks for every region in use, then one stack per
    (experiment, region). Only the stack in an experiment's first region starts a run on
    deploy (the others hold what a fallback to their region needs), so deploying every
    stack runs each experiment once.

    Local and OpenAI-compatible experiments need no AWS resources and get no stack. Any
    cloud experiment brings the watchdog (stacks/watchdog.py), in its home region, whose
    foundation is built even when no experiment uses that region.
    """
    built = Built()
    cloud = [e for e in experiments if e.backend in CLOUD_BACKENDS]
    watchdog = WatchdogSettings.from_context(app.node) if cloud else None
    if watchdog:
        unswept(cloud, watchdog)
    placeholder_images(cloud, account)
    in_use = {r for e in cloud for r in e.regions} | ({watchdog.home_region} if watchdog
                                                       else set())
    for region in sorted(in_use):
        built.foundations[region] = FoundationStack(app, region, account=account)
        here = [e for e in cloud if region in e.regions]
        if here:  # the watchdog's home region may have no experiment to run
            built.benchmarks[region] = BenchmarkStack(
                app, region, foundation=built.foundations[region], experiments=here,
                account=account)
    for exp in cloud:
        for region in exp.regions:
            built.experiments.append(
                ExperimentStack(app, exp, region, foundation=built.foundations[region],
                                benchmark=built.benchmarks[region],
                                start_on_deploy=region == exp.regions[0], account=account)
            )
    if watchdog:
        built.watchdog = WatchdogStack(app, watchdog, account=account,
                                       foundation=built.foundations[watchdog.home_region])
    if validate:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return built
