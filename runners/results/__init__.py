"""Results: the store (a local folder or S3; nothing is overwritten), the run report
(summary.json, report.md, charts) and the compare report across runs.

May import: run_context, hardware, cost, telemetry (the parsers) and the standard library.
Never providers, workflow or the CLI.
"""
