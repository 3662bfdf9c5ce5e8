"""What a user's workload and check are handed: ``app``, the application as provisioned and emulated for one run
(issue 37, point 2).

A workload drives the app through plain HTTP and boto3 while faults fire; a check reads what the app left. Both
find the app's resources by the template's logical ids, never by physical names (a chaos run provisions each run
under a stack of its own)::

    def workload(app):
        requests.post(f"{app.api_url()}/orders", json={"id": "o-1"})
        app.client("sqs").send_message(QueueUrl=app.resource("Orders"), MessageBody="{}")

    def check(app):
        items = app.client("dynamodb").scan(TableName=app.resource("Shipments"))["Items"]
        return [] if len(items) == 1 else [f"{len(items)} shipments for one order"]
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seglog_client.sigv4 import Credentials
from seglog_emulator.settings import LOCAL_CREDENTIALS
from seglog_stack.clients import local_client
from seglog_stack.local import LocalDeployment


class AppError(Exception):
    """A workload or check asked for something the app does not have; the message names what it has."""


@dataclass
class App:
    """One run's application.

    Attributes:
        deployment: the run's resources on the local stack (names, types and attributes by logical id).
        apis: the API's base URL by the logical id of its HttpApi (the emulator serves one API per run).
        seed: the run's seed: a workload that draws at random should draw from :attr:`random`, so that the
            seed replays it.
        run: the run's number in its campaign (0 for the first).
        parameters: the template parameters the run was provisioned with.
        credentials: the key pair the emulator's gateway accepts on routes with ``AWS_IAM`` authorization (sign
            with it: SigV4, service ``execute-api``).
        shared: what the workload leaves for the check (the ids it created, what it was told): the same dict
            in both calls of one run.
    """

    deployment: LocalDeployment
    apis: dict[str, str]
    seed: int
    run: int = 0
    parameters: dict[str, Any] = field(default_factory=dict)
    credentials: Credentials = LOCAL_CREDENTIALS
    shared: dict[str, Any] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Set by the session the app runs in (:meth:`settle`).
    settler: Callable[[], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)

    def api_url(self, name: str | None = None) -> str:
        """The base URL of the template's API (``name``: its logical id, needed only where there are several).

        Raises:
            AppError: the template has no API with routes, or not the one named.
        """
        if name is None and len(self.apis) == 1:
            return next(iter(self.apis.values()))
        if name is not None and name in self.apis:
            return self.apis[name]
        known = ", ".join(self.apis) or "none (no function has an HttpApi event)"
        raise AppError(f"no API {name!r} in this run; the template's APIs with routes: {known}" if name is not None
                       else f"the template has {len(self.apis)} APIs: name one of {known}")

    def resource(self, logical_id: str) -> str:
        """What the resource got: a table's or bucket's name, a queue's URL, a topic's ARN (what ``!Ref`` gives).

        Raises:
            AppError: the template provisions no resource of that logical id (the message lists those it does).
        """
        try:
            return self.deployment.names[logical_id]
        except KeyError:
            raise AppError(f"no resource {logical_id!r} was provisioned; the template's are: "
                           f"{', '.join(sorted(self.deployment.names)) or 'none'}") from None

    def attribute(self, logical_id: str, name: str) -> str:
        """What ``!GetAtt logical_id.name`` gives (``Arn``, ``StreamArn``, ...).

        Raises:
            AppError: no such attribute was provisioned.
        """
        key = f"{logical_id}.{name}"
        if key not in self.deployment.attributes:
            raise AppError(f"no attribute {key!r}; known: {', '.join(sorted(self.deployment.attributes)) or 'none'}")
        return self.deployment.attributes[key]

    def settle(self) -> None:
        """Stop the faults and wait until the app is quiet (nothing in flight, every queue feeding a function
        empty): what a test does before it reads what the app left.

        Raises:
            AppError: the app is not run by a session that can settle it.
            AssertionError: it was still busy when the bound ran out (what kept it busy is said).
        """
        if self.settler is None:
            raise AppError("this app is not run by a chaos session: nothing to settle")
        self.settler()

    def client(self, service: str) -> Any:
        """A boto3 client of ``service`` on the local stack (one per service, reused).

        Raises:
            AppError: the local stack does not serve ``service``.
        """
        if service not in self._clients:
            endpoint = self.deployment.endpoints.get(service)
            if endpoint is None:
                raise AppError(f"the local stack serves no {service!r}; it serves "
                               f"{', '.join(sorted(self.deployment.endpoints))}")
            self._clients[service] = local_client(service, endpoint_url=endpoint, region=self.deployment.region)
        return self._clients[service]
