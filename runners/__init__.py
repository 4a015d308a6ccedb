"""benchstack runners: the code that runs in Lambda and on a laptop alike.

Standard library and boto3 only, so the Lambda asset needs no bundling step.
"""
