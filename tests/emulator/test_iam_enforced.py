"""IAM enforced through the emulator's workers on the real local stack (issue 10, point 5; DESIGN §10.2).

The API function runs in the emulator's worker processes behind its gateway, with the permissions the template
gives it (through the SAM transform). A template copy whose API policy lacks s3:ListBucket makes an append over
16 KB and an upload completion fail the way AWS fails them: S3 answers 403 for a key that does not exist yet
(Amazon S3 API Reference, GetObject/HeadObject "Permissions"), which the API reports as storage_unavailable with
the storage code AccessDenied; with the template as it is, both succeed. A denied DynamoDB call raises
ClientError AccessDeniedException inside the function (DynamoDB Developer Guide, Programming.Errors), and with
IAM off (``seglog emulate --no-iam``) the same call goes through.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import signed_http
from seglog_aws.clients import client, local_session
from seglog_awsmodel.config import EmulatorConfig, FunctionSpec
from seglog_awsmodel.template import Template, load_template
from seglog_emulator.api_auth import IamAuthorizer
from seglog_emulator.child import Child
from seglog_emulator.gateway import Gateway
from seglog_emulator.iam.evaluation import FunctionPermissions
from seglog_emulator.iam.roles import function_permissions
from seglog_emulator.invoker import LambdaInvoker
from seglog_emulator.resolve import LocalResolver
from seglog_emulator.settings import EmulatorSettings
from seglog_plugin.resources import local_env, resources_of
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack

HANDLERS = Path(__file__).resolve().parent / "handlers"
#: A range whose encoded body is well over the 16 KB large-entry threshold (DESIGN §3 "Large entries").
LARGE_RANGE = [[f"row {r} col {c} padding padding" for c in range(8)] for r in range(120)]


def stack_of(deployment: LocalDeployment) -> str:
    return resources_of(deployment).entries_table.rsplit("-", 1)[0]


def without_list_bucket(template: Template) -> Template:
    """The template with s3:ListBucket taken out of the API function's policy."""
    body = copy.deepcopy(template.body)
    statements = body["Resources"]["ApiFunction"]["Properties"]["Policies"][0]["Statement"]
    body["Resources"]["ApiFunction"]["Properties"]["Policies"][0]["Statement"] = [
        s for s in statements if "s3:ListBucket" not in s["Action"]]
    assert len(statements) - 1 == len(body["Resources"]["ApiFunction"]["Properties"]["Policies"][0]["Statement"])
    return Template(path=template.path, body=body)


def resolver(deployment: LocalDeployment, template: Template) -> LocalResolver:
    session = local_session(deployment.region)
    return LocalResolver(template, stack=stack_of(deployment), region=deployment.region,
                         dynamodb=client("dynamodb", session=session, endpoint_url=deployment.endpoints["dynamodb"]),
                         sqs=client("sqs", session=session, endpoint_url=deployment.endpoints["sqs"]))


def permissions_for(deployment: LocalDeployment, template: Template) -> dict[str, FunctionPermissions]:
    return function_permissions(template, stack=stack_of(deployment), region=deployment.region,
                                fallback=resolver(deployment, template))


@contextmanager
def api_gateway(deployment: LocalDeployment, template: Template, log: Path, code: Path) -> Iterator[str]:
    """The template's ApiFunction behind the emulator's gateway, IAM enforced from ``template``; its base URL."""
    config = EmulatorConfig.from_template(template, resolver(deployment, template))
    spec = config.functions["ApiFunction"]
    spec = dataclasses.replace(spec, Environment={**local_env(deployment), **spec.Environment})
    with log.open("w") as stderr:
        invoker = LambdaInvoker(spec, code=[code], concurrency=2, stderr=stderr,
                                iam=permissions_for(deployment, template)["ApiFunction"])
        authorizer = IamAuthorizer.accepting([signed_http.LOCAL], region=deployment.region)
        gateway = Gateway(config.http_routes, invoker, authorizer=authorizer)
        thread = threading.Thread(target=gateway.serve, daemon=True)
        thread.start()
        try:
            yield gateway.url
        finally:
            gateway.stop()
            thread.join(10)
            invoker.close(grace=5)


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    """A signed POST (the API requires IAM authorization) and its JSON answer."""
    status, answer = signed_http.call("POST", url, body)
    return status, answer


def create_sheet(api: str) -> str:
    status, created = post(f"{api}/sheets", {})
    assert 201 == status or 200 == status, created
    return str(created["log_id"])


@pytest.mark.parametrize("list_bucket", [False, True], ids=["without-ListBucket", "with-ListBucket"])
def test_a_large_append_needs_only_put_object_for_its_conditional_put(
        deployment: LocalDeployment, tmp_path: Path, lambda_code: Path, list_bucket: bool) -> None:
    """The append writes its body with PutObject If-None-Match: * and reads no tags first: "To perform a
    conditional write with the HTTP If-None-Match header, you must have the s3:PutObject permission" (Amazon S3
    User Guide, https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html), so it succeeds
    with or without s3:ListBucket (before issue 18 its GetObjectTagging of a key not written yet was 403
    without it)."""
    template = load_template() if list_bucket else without_list_bucket(load_template())
    with api_gateway(deployment, template, tmp_path / "workers.log", lambda_code) as api:
        sheet = create_sheet(api)
        status, answer = post(f"{api}/sheets/{sheet}/entries", {
            "entry": {"type": "setrng", "ref": "A1", "values": LARGE_RANGE}, "entry_id": str(uuid.uuid4()),
            "since": {"segment": 0, "num": 0}})
    worker_log = (tmp_path / "workers.log").read_text()
    assert 200 == status, answer
    assert answer["external"].startswith(f"entries/{sheet}/")
    assert "access denied (IAM)" not in worker_log


@pytest.mark.parametrize("list_bucket", [False, True], ids=["without-ListBucket", "with-ListBucket"])
def test_completing_an_upload_that_was_never_put_is_404_only_with_list_bucket(
        deployment: LocalDeployment, tmp_path: Path, list_bucket: bool, lambda_code: Path) -> None:
    """The completion HEADs the upload's key: with s3:ListBucket S3 answers 404 and the API says
    upload_not_found; without it S3 answers 403 and the API can only report the storage failure (a HEAD answer
    has no body, so botocore's error code is the bare status, "403", as it is with S3 itself)."""
    template = load_template() if list_bucket else without_list_bucket(load_template())
    with api_gateway(deployment, template, tmp_path / "workers.log", lambda_code) as api:
        sheet = create_sheet(api)
        status, presigned = post(f"{api}/sheets/{sheet}/uploads", {"size": 10, "content_type": "text/csv"})
        assert 201 == status or 200 == status, presigned
        status, answer = post(f"{api}/sheets/{sheet}/uploads/{presigned['upload_id']}/complete",
                              {"type": "imp", "entry_id": str(uuid.uuid4()), "since": {"segment": 0, "num": 0}})
    expected = (404, "upload_not_found") if list_bucket else (503, "storage_unavailable")
    assert expected == (status, answer["error"]["code"]), answer
    if not list_bucket:
        assert "403" == answer["error"]["storage_code"]


def probe_invoker(deployment: LocalDeployment, iam: FunctionPermissions | None, code: Path) -> LambdaInvoker:
    """The probe handler first on the path, then the built artifact (its boto3, seglog_aws), as a layer would."""
    spec = FunctionSpec(logical_id="ApiFunction", Handler="iam_probe.call", Timeout=20,
                        Environment=local_env(deployment))
    return LambdaInvoker(spec, code=[HANDLERS, code], iam=iam)


@pytest.fixture(scope="module")
def api_role(deployment: LocalDeployment) -> FunctionPermissions:
    return permissions_for(deployment, load_template())["ApiFunction"]


def delete_entry(deployment: LocalDeployment) -> dict[str, Any]:
    return {"service": "dynamodb", "operation": "delete_item",
            "params": {"TableName": resources_of(deployment).entries_table,
                       "Key": {"G": {"B": uuid.uuid4().hex}, "N": {"N": "0"}}}}


def test_a_denied_dynamodb_call_raises_access_denied_exception_in_the_function(
        deployment: LocalDeployment, api_role: FunctionPermissions, lambda_code: Path) -> None:
    """The API may not delete entries: AWS's AccessDeniedException, HTTP 400, naming the role session."""
    with probe_invoker(deployment, api_role, lambda_code) as invoker:
        result = invoker.invoke(delete_entry(deployment))
    assert result.ok, result.error_message
    table = f"arn:aws:dynamodb:{deployment.region}:000000000000:table/{resources_of(deployment).entries_table}"
    assert {"code": "AccessDeniedException", "status": 400, "iam_variable_visible": False,
            "message": f"User: {api_role.caller.session} is not authorized to perform: dynamodb:DeleteItem on "
                       f"resource: {table} because no identity-based policy allows the dynamodb:DeleteItem action"
            } == result.payload


def test_without_iam_the_same_call_goes_through(deployment: LocalDeployment, lambda_code: Path) -> None:
    with probe_invoker(deployment, None, lambda_code) as invoker:
        result = invoker.invoke(delete_entry(deployment))
    assert {"ok": True, "iam_variable_visible": False} == result.payload


def test_an_allowed_call_reaches_the_service(deployment: LocalDeployment, api_role: FunctionPermissions,
                                             lambda_code: Path) -> None:
    """The API may read entries: the call is sent and answered by the local stack."""
    event = {"service": "dynamodb", "operation": "get_item",
             "params": {"TableName": resources_of(deployment).entries_table,
                        "Key": {"G": {"B": uuid.uuid4().hex}, "N": {"N": "0"}}}}
    with probe_invoker(deployment, api_role, lambda_code) as invoker:
        result = invoker.invoke(event)
    assert {"ok": True, "iam_variable_visible": False} == result.payload


@pytest.mark.parametrize("iam", [True, False], ids=["iam", "no-iam"])
def test_the_emulator_settings_switch_iam_for_every_function(deployment: LocalDeployment, tmp_path: Path,
                                                             iam: bool) -> None:
    """``seglog emulate --no-iam`` sets EmulatorSettings.iam; each child then hands its workers no permissions."""
    settings = EmulatorSettings(deployment=deployment, template=load_template().path, stack=stack_of(deployment),
                                state_dir=tmp_path, iam=iam)
    child = Child("gateway:HttpApi", EmulatorSettings.from_json(settings.to_json()))
    permissions: Callable[[str], FunctionPermissions | None] = child._iam
    found = [permissions(f) for f in ("ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction")]
    assert [iam] * 3 == [p is not None for p in found]
