"""Telemetry: what the engine, the server and the device say about a run, beside the
client's clock. Parsers for the engine's startup log (vLLM, llama.cpp), vLLM's Prometheus
/metrics page and a sampler around a measuring window, the SageMaker endpoint's
CloudWatch log lines and metrics, and the accelerator samples (nvidia-smi, neuron-monitor).

Every figure carries its source; a source that is missing says why, never a blank.

May import: the standard library and boto3 (the CloudWatch readers take a client that the
caller makes). Never providers, results, workflow or the CLI: those call in here.
"""
