"""Backend clients: one per serving API, all returning the same `Reply`.

openai_http (vLLM, llama.cpp), sagemaker_runtime (InvokeEndpoint[WithResponseStream]) and
bedrock_converse (Converse[Stream]). Standard library and boto3 only.

May import: the standard library and boto3 only.
"""
