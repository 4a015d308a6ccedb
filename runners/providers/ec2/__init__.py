"""The EC2 backend: the provider (place, poll, client, teardown), the instant CreateFleet
over instance types x AZ subnets (fleet) and the EC2 API helpers (api).
"""
