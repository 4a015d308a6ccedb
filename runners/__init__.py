"""benchstack runners: the code that runs in Lambda and on a laptop alike.

Standard library and boto3 only; the Lambda asset carries the pinned boto3/botocore
beside them (benchstack_constructs/runner_bundle.py, runners/sdk.py).

Rooms, each a subpackage whose docstring says what it owns and what it may import:

    measure/     the phases that measure, the quality suite, tool-call check, stats
    backends/    request clients (OpenAI HTTP, SageMaker runtime, Bedrock Converse)
    providers/   place, poll, hand out a client, tear down: one per backend
    checks/      what runs before anything bills (preflight)
    results/     the results store, the run report, compare
    cost/        prices and $ arithmetic, the cost phase
    telemetry/   engine log facts, /metrics, CloudWatch logs and metrics, device samples
    workflow/    phase list, local driver, Lambda handler, starter, execution contract
    watchdog/    the scheduled sweep that deletes what outlived its run

Shared by all rooms, at the top: experiment (the schema), hardware (the catalog),
regions, tags, run_context (what every phase gets), progress, code_digest; cli is the
command line over all of them. Imports point one way: workflow -> measure, providers,
results -> backends, cost, telemetry -> the shared modules -> standard library and boto3
(tests/unit/test_import_rules.py).
"""
