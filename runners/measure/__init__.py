"""Measurement: the phases that send requests and turn replies into figures (warmup,
decode, stream, context, load, quality, toolcall), the load profiles (load/), prompts of
an exact engine-token length, datasets, SLO goodput, the quality suite, the tool-call
check, the degeneracy check, the statistics, and the health check of a running model
(health).

May import: backends (the request clients), run_context, progress, telemetry.prometheus
(the /metrics sampler) and the standard library. Never providers (placement, AWS control
planes), results, workflow or the CLI: a phase measures whatever client it is handed.
"""
