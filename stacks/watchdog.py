"""WatchdogStack: one per account, in a home region, sweeping every benchstack region.

Settings come from CDK context (cdk.json or `-c`):
  watchdog_region      home region (default us-east-2); its foundation holds the audit and
                       the alerts topic
  watchdog_regions     regions to sweep, comma-separated (default us-east-1,us-east-2,us-west-2)
  watchdog_rate_minutes  schedule (default 15)
  watchdog_dry_run     "true" reports what would be deleted and deletes nothing
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Environment, Stack, Tags
from constructs import Construct, Node

from benchstack_constructs.watchdog import Watchdog, WatchdogProps
from runners import regions as known_regions
from runners.experiment import ExperimentError
from runners.watchdog.lambda_handler import TIMEOUT_S
from runners.watchdog.sweep import DEFAULT_REGIONS
from stacks import names
from stacks.foundation import FoundationStack

SOURCE = "cdk context"
MIN_RATE_MINUTES = TIMEOUT_S // 60 + 1  # a sweep may run its whole timeout: no overlap


@dataclass(frozen=True)
class WatchdogSettings:
    home_region: str = "us-east-2"
    regions: tuple[str, ...] = DEFAULT_REGIONS
    rate_minutes: int = 15
    dry_run: bool = False

    @classmethod
    def from_context(cls, node: Node) -> "WatchdogSettings":
        """Settings from context; a bad value is an ExperimentError naming the key."""
        home = node.try_get_context("watchdog_region") or cls.home_region
        _known(home, "watchdog_region")
        raw = node.try_get_context("watchdog_regions")
        chosen = (tuple(r.strip() for r in raw.split(",") if r.strip())
                  if isinstance(raw, str) else tuple(raw or DEFAULT_REGIONS))
        if not chosen:
            raise ExperimentError(SOURCE, "watchdog_regions", "is empty; give at least 1")
        for region in chosen:
            _known(region, "watchdog_regions")
        rate = node.try_get_context("watchdog_rate_minutes") or cls.rate_minutes
        try:
            rate = int(rate)
        except (TypeError, ValueError):
            rate = -1
        if rate < MIN_RATE_MINUTES:
            raise ExperimentError(SOURCE, "watchdog_rate_minutes",
                                  f"must be a whole number >= {MIN_RATE_MINUTES}")
        dry = node.try_get_context("watchdog_dry_run")
        if str(dry).lower() not in ("none", "true", "false"):
            raise ExperimentError(SOURCE, "watchdog_dry_run", f"{dry!r}: use true or false")
        return cls(home, chosen, rate, str(dry).lower() == "true")


def _known(region: str, key: str) -> None:
    if region not in known_regions.KNOWN:
        raise ExperimentError(SOURCE, key, f"{region!r} is not a known region; known: "
                                           f"{', '.join(known_regions.KNOWN)}")


class WatchdogStack(Stack):
    def __init__(self, scope: Construct, settings: WatchdogSettings, *,
                 foundation: FoundationStack, account: str | None = None):
        super().__init__(
            scope, names.watchdog(),
            env=Environment(account=account, region=settings.home_region),
            description=f"benchstack watchdog: every {settings.rate_minutes} min, deletes "
                        f"expired or orphaned benchstack resources in "
                        f"{', '.join(settings.regions)}"
                        f"{' (dry run: reports only)' if settings.dry_run else ''}",
        )
        self.settings = settings
        self.add_stack_dependency(foundation)
        Tags.of(self).add("benchstack:component", "watchdog")
        self.watchdog = Watchdog(self, "Watchdog", WatchdogProps(
            regions=settings.regions,
            results_bucket_parameter=names.foundation_parameter("results-bucket"),
            alerts=foundation.alerts,
            rate=Duration.minutes(settings.rate_minutes),
            dry_run=settings.dry_run,
        ))
