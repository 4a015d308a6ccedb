"""Reusable L3 constructs for benchstack.

Named `benchstack_constructs`, not `constructs`: a top-level `constructs` package would
shadow the `constructs` library that every CDK module imports.
"""
