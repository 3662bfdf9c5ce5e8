"""Simulated AWS services: DynamoDB (with streams), SQS and S3, behind boto3-shaped client facades.

Each service is a plain in-memory model whose ``call(operation, params)`` answers as the AWS API does (the same
response shapes, the same ClientError codes), so seglog's real adapters (seglog_aws) run on it unchanged. They know
nothing of faults or scheduling: the simulator's world wraps every call.
"""
