"""The API against its own OpenAPI document, fuzzed (issue 23): Schemathesis generates requests from
``GET /openapi.json`` — valid ones and invalid ones, each operation alone and chained through the document's
links (create a sheet, then append to it, sync it, upload to it...) — signs every one with SigV4 as a client
would, and runs all of its checks on every answer: no 5xx, only documented status codes and content types,
bodies that match the documented schemas, invalid data refused and valid data accepted, a request without a
valid signature refused.

By default it runs against the emulator (``seglog emulate`` on the session's stack). Against a deployed API::

    ./dev test tests/client/test_api_fuzz.py --api-url https://abc123.execute-api.eu-west-1.amazonaws.com

signs with the credentials the AWS SDK would find (environment, shared config files) for the URL's region. It
creates sheets there.

The seed is fixed (``derandomize``) and the run bounded by example counts, so a run is repeatable and takes about
the same time. Two of Schemathesis's checks are left out, each for a reason the API cannot change:

* ``missing_required_header`` expects 401 for a request without ``Authorization``; API Gateway answers 403.
* ``unsupported_method`` expects 405 with ``Allow`` for a method a path does not declare; an HTTP API answers 404
  ``{"message":"Not Found"}`` when no route matches (API Gateway Developer Guide, "Create routes for HTTP APIs":
  only a ``$default`` route catches the rest), and the emulator's gateway answers as it does
  (``tests/client/test_gateway_edges.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import PositiveDataAcceptanceConfig
from schemathesis.config._checks import NegativeDataRejectionConfig  # not exported by schemathesis.config

from client.conftest import Emulated
from seglog_client import Credentials, sigv4
from seglog_client.credentials import region_for, resolve
from seglog_services.api.openapi import document

pytestmark = pytest.mark.stack

#: Generated cases per operation, valid and invalid (9 operations).
EXAMPLES = 200
#: Stateful runs, and the most linked calls in one.
STATEFUL_RUNS, STATEFUL_STEPS = 60, 8
#: Checks left out (see the module docstring).
EXCLUDED = ["missing_required_header", "unsupported_method"]


@dataclass(frozen=True)
class Target:
    url: str
    credentials: Credentials
    region: str


_TARGET: list[Target] = []  # set by the ``target`` fixture before any request is made


class SigV4(requests.auth.AuthBase):
    """Signs the request as it will be sent (final URL, query and body): what a client of the API does. Applied
    by Schemathesis to generated requests, and left off for its own probes of a missing or wrong signature."""

    sent = 0

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        SigV4.sent += 1
        target = _TARGET[-1]
        body = request.body.encode() if isinstance(request.body, str) else request.body
        signed = {k.lower(): v for k, v in request.headers.items() if k.lower() == "content-type"}
        request.headers.update(sigv4.sign(request.method or "GET", request.url or "", signed, body,
                                          target.credentials, region=target.region))
        return request


schema = schemathesis.openapi.from_dict(document())
schema.config.seed = 23
schema.config.output.sanitization.update(enabled=False)  # the curl to reproduce a finding shows the real headers
schema.config.checks.update(excluded_check_names=EXCLUDED)
# A body over a size limit is refused with 413 (the function's 1 MB, API Gateway's 10 MB): a rejection too.
schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NegativeDataRejectionConfig().expected_statuses, "413"])
# The document's contract: a request it allows may still get 422 (the entry id names another entry, or the sheet
# cannot take the entry: a range past XFD or row 1,048,576, a text over 32 KB of UTF-8), never 400.
schema.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
    expected_statuses=[*PositiveDataAcceptanceConfig().expected_statuses, "422"])
schema.auth.set_from_requests(SigV4())

SETTINGS: Any = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    api_url = request.config.getoption("--api-url")
    if api_url:
        found = Target(url=api_url.rstrip("/"), credentials=resolve()(), region=region_for(api_url))
    else:
        emulated: Emulated = request.getfixturevalue("emulator")
        found = Target(url=emulated.url, credentials=emulated.credentials, region=region_for(emulated.url))
    _TARGET.append(found)
    schema.config.update(base_url=found.url)
    yield found
    _TARGET.remove(found)
    print(f"\napi fuzz: {SigV4.sent} signed requests to {found.url} (Schemathesis {schemathesis.__version__})")


def test_the_served_document_is_the_one_fuzzed(target: Target) -> None:
    reply = requests.get(f"{target.url}/openapi.json", auth=SigV4(), timeout=30)
    assert reply.status_code == 200
    assert reply.json() == json.loads(json.dumps(document()))


@schema.parametrize()
@SETTINGS
def test_every_operation_answers_as_its_document_says(case: schemathesis.Case, target: Target) -> None:
    case.call_and_validate(base_url=target.url)


def test_linked_operations_answer_as_the_document_says(target: Target) -> None:
    """Chains of calls through the document's links: a sheet created, then appended to, loaded, synced, its
    snapshots asked for, an upload started and completed."""
    workflow = schema.as_state_machine()
    workflow.run(settings=settings(max_examples=STATEFUL_RUNS, stateful_step_count=STATEFUL_STEPS, deadline=None,
                                   derandomize=True, suppress_health_check=list(HealthCheck)))
