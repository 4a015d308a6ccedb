"""Checks that run before anything bills: preflight (the model's config and weights
headers from the Hugging Face Hub against the experiment).

May import: experiment, hardware and the standard library. Never providers, results,
workflow or the CLI.
"""
