"""What every simulated service shares: botocore's error shape and a boto3-shaped client over ``call``.

A simulated service is a model with ``call(operation, params)``; seglog's adapters want a boto3 client
(``client.send_message(QueueUrl=..., ...)``). :class:`SimClient` turns one into the other with nothing in between,
so the simulator's world can wrap ``call`` (scheduling, faults) and hand the adapters the wrapped client.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from botocore.exceptions import ClientError, ParamValidationError

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def client_error(operation: str, code: str, message: str, *, status: int = 400, sender: bool = True,
                 extra: dict[str, Any] | None = None) -> ClientError:
    """The ClientError botocore raises for an error answer: ``exc.response["Error"]["Code"]`` is what the adapters
    match on, ``ResponseMetadata.HTTPStatusCode`` what :func:`seglog_aws.errors.translate` reads for 5xx; ``extra``
    adds top-level fields (DynamoDB's CancellationReasons, Item)."""
    response: Any = {"Error": {"Code": code, "Message": message, "Type": "Sender" if sender else "Receiver"},
                     "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0},
                     **(extra or {})}
    return ClientError(response, operation)


def missing_parameter(exc: KeyError) -> ParamValidationError:
    """What botocore raises, before sending, for a call without a required parameter."""
    return ParamValidationError(report=f"Missing required parameter in input: {exc.args[0]!r}")


def snake(operation: str) -> str:
    """boto3's method name for an operation: ``ListObjectsV2`` -> ``list_objects_v2``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


class SimService:
    """A simulated service: ``_operations`` maps each modelled operation to its handler; :meth:`call` answers."""

    _operations: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one API call as boto3's low-level client would (or raise its ClientError)."""
        handler = self._operations.get(operation)
        if handler is None:
            raise NotImplementedError(f"{type(self).__name__} does not model {operation} (it models "
                                      f"{sorted(self._operations)})")
        try:
            response = handler(params)
        except KeyError as exc:
            raise missing_parameter(exc) from None
        response.setdefault("ResponseMetadata", {"HTTPStatusCode": 200})
        return response


class SimClient:
    """A boto3-shaped client: ``client.put_object(**params)`` is ``call("PutObject", params)``.

    Subclasses list their operations in ``OPERATIONS``; a method is made on first use and kept on the instance, so
    later calls cost one attribute lookup. An unknown method raises AttributeError, as on a boto3 client.
    """

    OPERATIONS: ClassVar[tuple[str, ...]] = ()
    _methods: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._methods = {snake(op): op for op in cls.OPERATIONS}

    def __init__(self, call: Call) -> None:
        self._call = call

    def __getattr__(self, name: str) -> Callable[..., dict[str, Any]]:
        operation = self._methods.get(name)
        if operation is None:
            raise AttributeError(f"{type(self).__name__} has no method {name!r} (simulated: {self.OPERATIONS})")
        call = self._call

        def method(**params: Any) -> dict[str, Any]:
            return call(operation, params)

        method.__name__ = name
        setattr(self, name, method)
        return method
