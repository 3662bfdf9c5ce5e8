"""ARNs of the resources a template provisions, spelled once for the provisioner, the emulator's resolver and IAM.

A topic's ``Ref`` is its ARN (AWS CloudFormation User Guide, aws-resource-sns-topic); a bus's ``Arn`` attribute and
the resource PutEvents is authorized on is ``arn:aws:events:{region}:{account}:event-bus/{name}`` (Amazon
EventBridge User Guide, eb-use-resource-based).
"""

from __future__ import annotations


def topic_arn(region: str, account: str, name: str) -> str:
    return f"arn:aws:sns:{region}:{account}:{name}"


def event_bus_arn(region: str, account: str, name: str) -> str:
    return f"arn:aws:events:{region}:{account}:event-bus/{name}"
