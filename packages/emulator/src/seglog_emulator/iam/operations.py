"""Which IAM action on which resource each API operation needs: one table per service.

Sources: the Service Authorization Reference ("Actions, resources, and condition keys for" Amazon DynamoDB,
Amazon S3 and Amazon SQS: list_amazondynamodb, list_amazons3, list_amazonsqs), the DynamoDB Developer Guide
(transaction-apis-iam: a transaction's Put, Update, Delete and Get are authorized as PutItem, UpdateItem,
DeleteItem and GetItem, ConditionCheck as ConditionCheckItem, with dynamodb:EnclosingOperation set) and the
Amazon S3 User Guide (using-with-s3-policy-actions, "Required permissions for Amazon S3 API operations").
Notable rows: SQS's batch operations need the action of their single form (there is no sqs:SendMessageBatch
action); GetObject and HeadObject are both s3:GetObject; listing a bucket is s3:ListBucket on the bucket; a
PutObject that sets tags needs s3:PutObjectTagging too; BatchWriteItem and BatchGetItem are authorized per table
they touch.

An operation not in the table has no known action: :func:`checks` returns None and the caller fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote, urlparse

from seglog_awsmodel.arns import event_bus_arn
from seglog_emulator.iam.arns import function_arn, local_arn
from seglog_emulator.iam.conditions import Context


@dataclass(frozen=True)
class Check:
    """One authorization a call needs: ``action`` on ``resource`` with ``context`` (service condition keys)."""

    action: str
    resource: str
    context: Context = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """Where calls go: the client's region and account, and how to find a stream from a shard iterator."""

    region: str
    account: str
    stream_of_iterator: Callable[[str], str | None] = lambda _iterator: None


class UnknownResourceError(LookupError):
    """The resource of a call cannot be told from its parameters (e.g. a shard iterator of unknown origin)."""


Mapper = Callable[[Mapping[str, Any], Target], list[Check]]

# ------------------------------------------------------------------------------------------------ DynamoDB


def _table_arn(name: str, target: Target) -> str:
    if name.startswith("arn:"):  # DynamoDB accepts a table's ARN as TableName
        return local_arn(name, target.region)
    return f"arn:aws:dynamodb:{target.region}:{target.account}:table/{name}"


def _table(action: str) -> Mapper:
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        return [Check(action, _table_arn(params["TableName"], target))]
    return checks


def _table_or_index(action: str) -> Mapper:
    """Query and Scan of an index are authorized on the index's ARN (``table/T/index/I``)."""
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        arn = _table_arn(params["TableName"], target)
        index = params.get("IndexName")
        return [Check(action, f"{arn}/index/{index}" if index else arn)]
    return checks


def _each_table(action: str) -> Mapper:
    """BatchWriteItem / BatchGetItem: the batch's action on every table of RequestItems (each table once)."""
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        return [Check(action, _table_arn(name, target)) for name in params.get("RequestItems", {})]
    return checks


_TRANSACT_WRITE: Final = {"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
                          "ConditionCheck": "dynamodb:ConditionCheckItem"}


def _transact(operation: str, actions: Mapping[str, str]) -> Mapper:
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        context = {"dynamodb:enclosingoperation": (operation,)}
        found = []
        for item in params.get("TransactItems", []):
            (kind, body), = item.items()
            found.append(Check(actions[kind], _table_arn(body["TableName"], target), context))
        return found
    return checks


DYNAMODB: Final[dict[str, Mapper]] = {
    "GetItem": _table("dynamodb:GetItem"),
    "PutItem": _table("dynamodb:PutItem"),
    "UpdateItem": _table("dynamodb:UpdateItem"),
    "DeleteItem": _table("dynamodb:DeleteItem"),
    "Query": _table_or_index("dynamodb:Query"),
    "Scan": _table_or_index("dynamodb:Scan"),
    "BatchWriteItem": _each_table("dynamodb:BatchWriteItem"),
    "BatchGetItem": _each_table("dynamodb:BatchGetItem"),
    "TransactWriteItems": _transact("TransactWriteItems", _TRANSACT_WRITE),
    "TransactGetItems": _transact("TransactGetItems", {"Get": "dynamodb:GetItem"}),
    "DescribeTable": _table("dynamodb:DescribeTable"),
    "DescribeTimeToLive": _table("dynamodb:DescribeTimeToLive"),
    "ListTables": lambda _params, _target: [Check("dynamodb:ListTables", "*")],
}


def _stream(action: str) -> Mapper:
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        return [Check(action, local_arn(params["StreamArn"], target.region))]
    return checks


def _records(params: Mapping[str, Any], target: Target) -> list[Check]:
    """GetRecords names only a shard iterator; the stream is the one that iterator was made for."""
    iterator = str(params["ShardIterator"])
    arn = target.stream_of_iterator(iterator)
    if arn is None and iterator.startswith("arn:") and "|" in iterator:  # AWS's iterators begin with the stream ARN
        arn = iterator.split("|", 1)[0]
    if arn is None:
        raise UnknownResourceError("GetRecords with a shard iterator this client did not obtain")
    return [Check("dynamodb:GetRecords", local_arn(arn, target.region))]


DYNAMODB_STREAMS: Final[dict[str, Mapper]] = {
    "DescribeStream": _stream("dynamodb:DescribeStream"),
    "GetShardIterator": _stream("dynamodb:GetShardIterator"),
    "GetRecords": _records,
    "ListStreams": lambda _params, _target: [Check("dynamodb:ListStreams", "*")],
}

# ------------------------------------------------------------------------------------------------ S3


def _object_arn(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _object(action: str, *, versioned: str | None = None) -> Mapper:
    def checks(params: Mapping[str, Any], _target: Target) -> list[Check]:
        name = versioned if versioned and params.get("VersionId") else action
        return [Check(name, _object_arn(params["Bucket"], params["Key"]))]
    return checks


def _put_object(params: Mapping[str, Any], _target: Target) -> list[Check]:
    arn = _object_arn(params["Bucket"], params["Key"])
    found = [Check("s3:PutObject", arn)]
    if params.get("Tagging"):  # "you must have the s3:PutObjectTagging permission" to tag on upload (PutObject)
        found.append(Check("s3:PutObjectTagging", arn))
    return found


def _copy(params: Mapping[str, Any], _target: Target) -> list[Check]:
    """CopyObject / UploadPartCopy: read the source, write the destination."""
    source = params["CopySource"]
    if isinstance(source, Mapping):
        source_arn = _object_arn(source["Bucket"], source["Key"])
    else:
        source_arn = f"arn:aws:s3:::{unquote(str(source).lstrip('/').split('?', 1)[0])}"
    return [Check("s3:GetObject", source_arn), Check("s3:PutObject", _object_arn(params["Bucket"], params["Key"]))]


def _bucket(action: str) -> Mapper:
    def checks(params: Mapping[str, Any], _target: Target) -> list[Check]:
        context = {f"s3:{name.lower()}": (str(params[param]),)
                   for name, param in (("prefix", "Prefix"), ("delimiter", "Delimiter"), ("max-keys", "MaxKeys"))
                   if param in params}
        return [Check(action, f"arn:aws:s3:::{params['Bucket']}", context)]
    return checks


def _delete_objects(params: Mapping[str, Any], _target: Target) -> list[Check]:
    return [Check("s3:DeleteObject", _object_arn(params["Bucket"], o["Key"]))
            for o in params.get("Delete", {}).get("Objects", [])]


S3: Final[dict[str, Mapper]] = {
    "GetObject": _object("s3:GetObject", versioned="s3:GetObjectVersion"),
    "HeadObject": _object("s3:GetObject", versioned="s3:GetObjectVersion"),
    "PutObject": _put_object,
    "CopyObject": _copy,
    "DeleteObject": _object("s3:DeleteObject", versioned="s3:DeleteObjectVersion"),
    "DeleteObjects": _delete_objects,
    "GetObjectTagging": _object("s3:GetObjectTagging", versioned="s3:GetObjectVersionTagging"),
    "PutObjectTagging": _object("s3:PutObjectTagging", versioned="s3:PutObjectVersionTagging"),
    "DeleteObjectTagging": _object("s3:DeleteObjectTagging", versioned="s3:DeleteObjectVersionTagging"),
    "GetObjectAttributes": _object("s3:GetObjectAttributes", versioned="s3:GetObjectVersionAttributes"),
    "ListObjects": _bucket("s3:ListBucket"),
    "ListObjectsV2": _bucket("s3:ListBucket"),
    "HeadBucket": _bucket("s3:ListBucket"),
    "GetBucketLocation": _bucket("s3:GetBucketLocation"),
    "CreateMultipartUpload": _object("s3:PutObject"),
    "UploadPart": _object("s3:PutObject"),
    "UploadPartCopy": _copy,
    "CompleteMultipartUpload": _object("s3:PutObject"),
    "AbortMultipartUpload": _object("s3:AbortMultipartUpload"),
    "ListParts": _object("s3:ListMultipartUploadParts"),
    "ListMultipartUploads": _bucket("s3:ListBucketMultipartUploads"),
}

# ------------------------------------------------------------------------------------------------ SQS


def queue_arn(url: str, region: str) -> str:
    """A queue's ARN from its URL: ``.../ACCOUNT/NAME`` (SQS Developer Guide, sqs-queue-message-identifiers)."""
    parts = [p for p in urlparse(url).path.split("/") if p]
    if len(parts) < 2:
        raise UnknownResourceError(f"{url!r} is not a queue URL (…/ACCOUNT/NAME)")
    return f"arn:aws:sqs:{region}:{parts[-2]}:{parts[-1]}"


def _queue(action: str) -> Mapper:
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        return [Check(action, queue_arn(params["QueueUrl"], target.region))]
    return checks


def _queue_url(params: Mapping[str, Any], target: Target) -> list[Check]:
    account = params.get("QueueOwnerAWSAccountId") or target.account
    return [Check("sqs:GetQueueUrl", f"arn:aws:sqs:{target.region}:{account}:{params['QueueName']}")]


SQS: Final[dict[str, Mapper]] = {
    "SendMessage": _queue("sqs:SendMessage"),
    "SendMessageBatch": _queue("sqs:SendMessage"),
    "ReceiveMessage": _queue("sqs:ReceiveMessage"),
    "DeleteMessage": _queue("sqs:DeleteMessage"),
    "DeleteMessageBatch": _queue("sqs:DeleteMessage"),
    "ChangeMessageVisibility": _queue("sqs:ChangeMessageVisibility"),
    "ChangeMessageVisibilityBatch": _queue("sqs:ChangeMessageVisibility"),
    "GetQueueAttributes": _queue("sqs:GetQueueAttributes"),
    "SetQueueAttributes": _queue("sqs:SetQueueAttributes"),
    "PurgeQueue": _queue("sqs:PurgeQueue"),
    "GetQueueUrl": _queue_url,
    "ListQueues": lambda _params, _target: [Check("sqs:ListQueues", "*")],
}

# ------------------------------------------------------------------------------------------------ Lambda


def _function_arn(params: Mapping[str, Any], target: Target) -> list[Check]:
    """lambda:InvokeFunction on the function the call names: its ARN, ``name`` or ``name:qualifier`` (a
    qualified call is authorized on the qualified ARN, Lambda Developer Guide, lambda-api-permissions-ref)."""
    name = str(params["FunctionName"])
    if name.startswith("arn:"):
        arn = local_arn(name, target.region)
    else:
        arn = function_arn(target.region, target.account, name)
    if params.get("Qualifier"):
        arn = f"{arn}:{params['Qualifier']}"
    return [Check("lambda:InvokeFunction", arn)]


LAMBDA: Final[dict[str, Mapper]] = {"Invoke": _function_arn}

# ------------------------------------------------------------------------------------------------ SNS


def _topic(action: str) -> Mapper:
    def checks(params: Mapping[str, Any], target: Target) -> list[Check]:
        arn = params.get("TopicArn") or params.get("TargetArn")
        if not arn:
            raise UnknownResourceError("an SNS call without TopicArn or TargetArn (an SMS?) is not emulated")
        return [Check(action, str(arn))]
    return checks


SNS: Final[dict[str, Mapper]] = {"Publish": _topic("sns:Publish"), "PublishBatch": _topic("sns:Publish"),
                                 "GetTopicAttributes": _topic("sns:GetTopicAttributes")}

# ------------------------------------------------------------------------------------------------ EventBridge


def _put_events(params: Mapping[str, Any], target: Target) -> list[Check]:
    """events:PutEvents on the bus of each entry (list_amazoneventbridge: resource type event-bus, ARN
    ``arn:aws:events:{Region}:{Account}:event-bus/{EventBusName}``), once per bus; an entry without EventBusName
    goes to the default bus, and EventBusName may be a bus's name or its ARN (EventBridge API Reference,
    PutEventsRequestEntry)."""
    buses: dict[str, None] = {}
    for entry in params.get("Entries") or []:
        bus = str(entry.get("EventBusName") or "default")
        arn = bus if bus.startswith("arn:") else event_bus_arn(target.region, target.account, bus)
        buses[arn] = None
    return [Check("events:PutEvents", arn) for arn in buses]


EVENTS: Final[dict[str, Mapper]] = {"PutEvents": _put_events}

#: botocore's service name -> its table.
OPERATIONS: Final[dict[str, dict[str, Mapper]]] = {
    "dynamodb": DYNAMODB, "dynamodbstreams": DYNAMODB_STREAMS, "s3": S3, "sqs": SQS, "lambda": LAMBDA, "sns": SNS,
    "events": EVENTS}


def checks(service: str, operation: str, params: Mapping[str, Any], target: Target) -> list[Check] | None:
    """The authorizations a call needs, in order; None when the emulator does not know the operation.

    Raises:
        UnknownResourceError: the call's resource cannot be told from its parameters.
    """
    mapper = OPERATIONS.get(service, {}).get(operation)
    return None if mapper is None else mapper(params, target)
