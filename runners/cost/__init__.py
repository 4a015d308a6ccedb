"""Cost model: prices with their provenance, pure arithmetic, and the `cost` phase.

    arithmetic   $/1M output tokens, $/month 24x7, Bedrock with input tokens, break-even
    pricing_api  GetProducts queries and PriceList parsing (EC2, SageMaker hosting)
    prices       quotes from the cache, the API or the checked-in prices file, with ages
    phase        run(context) -> the summary.json "cost" block

May import: the standard library and boto3 only.
"""
