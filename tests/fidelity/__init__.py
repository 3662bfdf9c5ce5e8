"""Fidelity tests: the emulator's event source mappings behave as AWS Lambda's do (DESIGN §9, items 1-10).

Each test drives a poller in-process against the local stack's real DynamoDB stream or SQS queue, with a real
:class:`seglog_emulator.invoker.LambdaInvoker` running :mod:`probe_handler` in worker processes, and cites the
page of the AWS Lambda Developer Guide whose behaviour it checks.
"""
