"""Checks that run before anything bills: preflight (the model's config and weights
headers from the Hugging Face Hub against the experiment).

And doctor (the account's readiness: bootstrap, stacks, quotas, images, AMIs, model
access, watchdog).

May import: experiment, hardware and the standard library. Never providers, results,
workflow or the CLI; doctor alone may read the names those rooms define (the parameters
the stacks publish, the SageMaker and EC2 names, the watchdog's regions), since checking
them is its job (tests/unit/test_import_rules.py NAME_READERS).
"""
