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

Two things the document cannot say, the run does itself:

* **Who signs.** Each request is signed by one of the key pairs the API accepts (against the emulator: two, so a
  sheet one caller made is used by the other), or now and then by a key pair no API accepts. The check
  :func:`the_signer_decides_the_door` holds the gateway to it: a stranger's request is refused 403
  UnrecognizedClientException before the function runs, a caller's is never refused at the door. Against a
  deployed API the callers are the one pair the AWS SDK finds.
* **The upload itself.** A started upload gets its bytes PUT to the presigned URL (:func:`put_the_upload`), with
  the headers the API gave and a body of the declared size and type, so the linked completion finds an object
  and appends the entry, or refuses (422) what cannot become one. In the linked runs started uploads are small
  enough to PUT and most completions of a PUT upload are steered to the entry type its bytes can become and to
  ``since`` 0/0 (:func:`steer`), so chains complete uploads (the run requires one at least); the rest are left
  as generated.

The seed is fixed (``derandomize``) and the run bounded by example counts, so a run is repeatable and takes about
the same time. Two of Schemathesis's checks are left out, each for a reason the API cannot change:

* ``missing_required_header`` expects 401 for a request without ``Authorization``; API Gateway answers 403.
* ``unsupported_method`` expects 405 with ``Allow`` for a method a path does not declare; an HTTP API answers 404
  ``{"message":"Not Found"}`` when no route matches (API Gateway Developer Guide, "Create routes for HTTP APIs":
  only a ``$default`` route catches the rest), and the emulator's gateway answers as it does
  (``tests/client/test_gateway_edges.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import PositiveDataAcceptanceConfig
from schemathesis.config._checks import NegativeDataRejectionConfig  # not exported by schemathesis.config

from client.conftest import Emulated
from seglog_client import Credentials, sigv4
from seglog_client.credentials import region_for, resolve
from seglog_core.bodies import MAX_BODY
from seglog_services.api.openapi import document

pytestmark = pytest.mark.stack

#: Generated cases per operation, valid and invalid (9 operations).
EXAMPLES = 200
#: Stateful runs, and the most linked calls in one.
STATEFUL_RUNS, STATEFUL_STEPS = 60, 8
#: Checks left out (see the module docstring).
EXCLUDED = ["missing_required_header", "unsupported_method"]


#: A key pair no API accepts (never issued): what it signs must be refused at the door.
STRANGER: Final = Credentials("AKIDNOSUCHCALLER", "no-such-callers-secret")
#: About one request in this many is signed by :data:`STRANGER` (operations alone; the linked runs keep their chains).
STRANGER_ONE_IN = 12
#: The largest upload :func:`put_the_upload` PUTs (bigger ones stay unsent: their completion answers 404).
MAX_PUT_BYTES = 16 * 1024
#: A range upload (setrng) of 27 bytes, padded with JSON whitespace to the size the upload declared.
RANGE_UPLOAD: Final = b'{"ref":"A1","values":[[1]]}'
#: One steerable completion in this many (counted in order: the first is steered) is left as generated in the
#: linked runs; the others are steered (:func:`steer`).
UNSTEERED_ONE_IN = 4
START: Final = {"segment": 0, "num": 0}


@dataclass(frozen=True)
class Target:
    url: str
    #: The key pairs the API accepts: each request is signed by one of them (or by STRANGER).
    callers: tuple[Credentials, ...]
    region: str


_TARGET: list[Target] = []  # set by the ``target`` fixture before any request is made
#: What the run did beyond the document, printed at its end: requests by signer, uploads PUT, completion answers.
TALLY: Counter[str] = Counter()
@dataclass(frozen=True)
class PutUpload:
    #: The entry type the bytes can become ("imp" for CSV and XLSX, "setrng" for JSON).
    entry_type: str
    #: The access key that started the upload: only its caller may complete it (the other is refused 403).
    starter: str


#: Every upload PUT so far, by upload id.
PUT_UPLOADS: dict[str, PutUpload] = {}
#: The uploads whose completion :func:`steer` steered, and the caller that must sign it (the starter).
STEERED: dict[str, str] = {}


class Run:
    """Whether the linked runs are under way: then no stranger signs, started uploads are small enough to PUT,
    and completions are steered towards success (:func:`steer`)."""

    linked = False
    #: Steerable completions seen so far in the linked runs (see :data:`UNSTEERED_ONE_IN`).
    steerable = 0


def _digest(*parts: str | bytes | None) -> bytes:
    """A stable choice from a request's content (never its host or port), so a replayed or shrunk request chooses
    the same."""
    return hashlib.sha256(b"\0".join(p.encode() if isinstance(p, str) else p or b"" for p in parts)).digest()


class SigV4(requests.auth.AuthBase):
    """Signs the request as it will be sent (final URL, query and body): what a client of the API does. Applied
    by Schemathesis to generated requests, and left off for its own probes of a missing or wrong signature.

    Who signs follows from the request's content: one of the target's callers, or, outside the linked runs and
    unless ``callers_only``, :data:`STRANGER` for about one request in :data:`STRANGER_ONE_IN`."""

    sent = 0

    def __init__(self, *, callers_only: bool = False) -> None:
        self.callers_only = callers_only

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        SigV4.sent += 1
        target = _TARGET[-1]
        body = request.body.encode() if isinstance(request.body, str) else request.body
        signed = {k.lower(): v for k, v in request.headers.items() if k.lower() == "content-type"}
        request.headers.update(sigv4.sign(request.method or "GET", request.url or "", signed, body,
                                          self.signer(request, body), region=target.region))
        return request

    def signer(self, request: requests.PreparedRequest, body: bytes | None) -> Credentials:
        callers = _TARGET[-1].callers
        steered = _steered_starter(request.path_url) if Run.linked else None
        if steered is not None:
            chosen = next(caller for caller in callers if caller.access_key_id == steered)
            TALLY[f"signed by {chosen.access_key_id}"] += 1
            return chosen
        digest = _digest(request.method, request.path_url, body)
        stranger = not (self.callers_only or Run.linked) and digest[0] % STRANGER_ONE_IN == 0
        chosen = STRANGER if stranger else callers[digest[1] % len(callers)]
        TALLY[f"signed by {chosen.access_key_id}"] += 1
        return chosen


def _steered_starter(path_url: str) -> str | None:
    """The caller that must sign a steered completion (its upload's starter), or None for any other request."""
    parts = path_url.split("?", 1)[0].strip("/").split("/")
    if len(parts) == 5 and parts[0] == "sheets" and parts[2] == "uploads" and parts[4] == "complete":
        return STEERED.get(parts[3])
    return None


def _signed_by(response: schemathesis.Response) -> str | None:
    """The access key a request was signed with (None: unsigned, one of Schemathesis's own probes)."""
    header = str(response.request.headers.get("authorization", ""))
    _, found, rest = header.partition("Credential=")
    return rest.split("/", 1)[0] if found else None


@schemathesis.check
def the_signer_decides_the_door(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """A request signed by a key pair the API does not accept never reaches the function: it is refused 403
    UnrecognizedClientException (Amazon API Gateway Developer Guide, http-api-access-control-iam; the emulator's
    texts are cited in seglog_emulator.api_auth), or, matching no route (a method no route declares), answered
    API Gateway's own 404 before any authorizer runs. One signed by any caller is never refused at the door."""
    key = _signed_by(response)
    if key is None:
        return None
    error_type = (response.headers.get("x-amzn-errortype") or [""])[0].partition(":")[0]
    if key == STRANGER.access_key_id:
        no_route = response.status_code == 404 and response.content == b'{"message":"Not Found"}'
        if (response.status_code, error_type) != (403, "UnrecognizedClientException") and not no_route:
            raise AssertionError(f"a request signed by a key pair the API does not accept was answered "
                                 f"{response.status_code} {error_type!r}, not 403 UnrecognizedClientException")
    elif response.status_code == 403 and error_type:
        raise AssertionError(f"caller {key} was refused at the door: {error_type} "
                             f"{response.content[:300].decode('utf-8', 'replace')}")
    return True


schema = schemathesis.openapi.from_dict(document())
schema.config.seed = 23
schema.config.output.sanitization.update(enabled=False)  # the curl to reproduce a finding shows the real headers
schema.config.checks.update(excluded_check_names=EXCLUDED)
# A body over a size limit is refused with 413 (the function's 1 MB, API Gateway's 10 MB): a rejection too.
schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NegativeDataRejectionConfig().expected_statuses, "413"])
# The document's contract: a request it allows may still get 422 (the entry id names another entry, the sheet
# cannot take the entry, an upload that cannot become it), never 400.
schema.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
    expected_statuses=[*PositiveDataAcceptanceConfig().expected_statuses, "422"])
schema.auth.set_from_requests(SigV4())


# ------------------------------------------------------------------------------------------ the upload's own step

COMPLETE: Final = "POST /sheets/{log_id}/uploads/{upload_id}/complete"
APPEND: Final = "POST /sheets/{log_id}/entries"


def upload_body(content_type: str, size: int) -> tuple[bytes, str]:
    """``size`` bytes of the upload's type, and the entry type they can become: a CSV of one text cell, a range
    padded with spaces; for an XLSX, or a range too small for RANGE_UPLOAD, bytes that do not parse (their
    completion is refused 422)."""
    if content_type == "text/csv":
        return b"a" * (size - 1) + b"\n", "imp"
    if content_type == "application/json":
        return (RANGE_UPLOAD + b" " * (size - len(RANGE_UPLOAD)) if size >= len(RANGE_UPLOAD) else b" " * size,
                "setrng")
    return b"\x00" * size, "imp"


def put_the_upload(case: schemathesis.Case, response: schemathesis.Response) -> None:
    """After a started upload (201), PUT its bytes as a client would: to ``url`` with exactly ``headers``."""
    if case.operation.label != "POST /sheets/{log_id}/uploads" or response.status_code != 201:
        return
    upload = response.json()
    headers = dict(upload["headers"])
    size = int(headers["Content-Length"])
    if size > MAX_PUT_BYTES:
        return
    data, entry_type = upload_body(headers["Content-Type"], size)
    reply = requests.put(upload["url"], data=data, headers=headers, timeout=30)
    assert reply.status_code == 200, (reply.status_code, reply.text[:300])
    starter = _signed_by(response)
    assert starter is not None, "a started upload answered 201 to an unsigned request"
    PUT_UPLOADS[upload["upload_id"]] = PutUpload(entry_type, starter)
    TALLY[f"uploads PUT ({headers['Content-Type']})"] += 1


@schema.hook
def after_call(context: Any, case: schemathesis.Case, response: schemathesis.Response) -> None:
    entry = case.body.get("entry") if isinstance(case.body, dict) else None
    if case.operation.label == APPEND and isinstance(entry, dict) and entry.get("type") == "edits":
        TALLY[f"batches answered {response.status_code}"] += 1  # issue 35: the document's batches are fuzzed too
    if case.operation.label == COMPLETE:
        try:
            code = response.json().get("error", {}).get("code", "")
        except ValueError:
            code = ""
        TALLY[f"completions answered {response.status_code} {code}".rstrip()] += 1
    put_the_upload(case, response)


@schema.hook
def map_body(context: Any, body: Any) -> Any:
    """In the linked runs, a valid upload size is made one :func:`put_the_upload` sends (1 to MAX_PUT_BYTES), so
    that chains reach a completion with an object to read; sizes out of range stay as generated."""
    operation = getattr(context, "operation", None)
    if (not Run.linked or operation is None or operation.label != "POST /sheets/{log_id}/uploads"
            or not isinstance(body, dict) or type(body.get("size")) is not int or not 1 <= body["size"] <= MAX_BODY):
        return body
    return {**body, "size": 1 + (body["size"] - 1) % MAX_PUT_BYTES}


def steer(case: schemathesis.Case) -> None:
    """A valid completion of an upload that was PUT gets the entry type its bytes can become and the start of
    the log as ``since`` (a position every new sheet holds), and is signed by the caller that started the upload,
    so that the chain appends the entry; one in :data:`UNSTEERED_ONE_IN`, counted in order, is left as generated
    (a type that does not fit, a position the log does not hold, perhaps the other caller).

    The choice is by count, never by the upload id: the server draws that id at random, and a choice hashed from
    it left a whole run with no completion steered (test_linked_operations_answer_as_the_document_says failed
    at random in CI with 5 of 38 completions steered, all of them signed by the caller that had not started
    the upload)."""
    upload_id = str((case.path_parameters or {}).get("upload_id", ""))
    body = case.body
    put = PUT_UPLOADS.get(upload_id)
    if (case.operation.label != COMPLETE or put is None or not isinstance(body, dict)
            or body.get("type") not in ("imp", "setrng") or not isinstance(body.get("since"), dict)):
        return
    Run.steerable += 1
    if Run.steerable % UNSTEERED_ONE_IN == 0:
        return
    case.body = {**body, "type": put.entry_type, "since": START}
    STEERED[upload_id] = put.starter
    TALLY["completions steered"] += 1


SETTINGS: Any = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    api_url = request.config.getoption("--api-url")
    if api_url:
        found = Target(url=api_url.rstrip("/"), callers=(resolve()(),), region=region_for(api_url))
    else:
        emulated: Emulated = request.getfixturevalue("emulator")
        found = Target(url=emulated.url, callers=(emulated.credentials, emulated.second),
                       region=region_for(emulated.url))
    _TARGET.append(found)
    schema.config.update(base_url=found.url)
    yield found
    _TARGET.remove(found)
    print(f"\napi fuzz: {SigV4.sent} signed requests to {found.url} (Schemathesis {schemathesis.__version__}); "
          + ", ".join(f"{what}: {count}" for what, count in sorted(TALLY.items())))


def test_the_served_document_is_the_one_fuzzed(target: Target) -> None:
    reply = requests.get(f"{target.url}/openapi.json", auth=SigV4(callers_only=True), timeout=30)
    assert reply.status_code == 200
    assert reply.json() == json.loads(json.dumps(document()))


@schema.parametrize()
@SETTINGS
def test_every_operation_answers_as_its_document_says(case: schemathesis.Case, target: Target) -> None:
    case.call_and_validate(base_url=target.url)


def test_linked_operations_answer_as_the_document_says(target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chains of calls through the document's links, by both callers in turn: a sheet created, then appended to,
    loaded, synced, its snapshots asked for, an upload started, its bytes PUT, and completed — and, completed
    again, found already appended."""
    monkeypatch.setattr(Run, "linked", True)

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: schemathesis.Case) -> None:
            steer(case)

    Workflow.run(settings=settings(max_examples=STATEFUL_RUNS, stateful_step_count=STATEFUL_STEPS, deadline=None,
                                   derandomize=True, suppress_health_check=list(HealthCheck)))
    assert any(what.startswith("completions answered 200") for what in TALLY), dict(TALLY)
    assert any(what.startswith("batches answered") for what in TALLY), dict(TALLY)
