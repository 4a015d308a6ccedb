"""Results: the store (a local folder or S3; nothing is overwritten), the run report
(summary.json, report.md, report.html, charts) and the compare report across runs, with
the interval arithmetic (intervals), summary checks (validate), grouping of repeated runs
(groups) and the answer-by-answer A/B (ab) they use.

May import: run_context, hardware, cost, telemetry (the parsers) and the standard library.
Never providers, workflow or the CLI.
"""
