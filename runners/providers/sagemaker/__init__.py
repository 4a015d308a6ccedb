"""The SageMaker backend: the provider, the endpoint life cycle calls (endpoint) and the
names benchstack gives endpoints (names).
"""
