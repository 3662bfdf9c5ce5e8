"""The client's SigV4 signing agrees with botocore's SigV4Auth (the reference implementation of "Create a signed AWS
API request", IAM User Guide) byte for byte on the Authorization header, on requests chosen to hit the corners of
the canonical form: odd query characters, repeated and empty parameters, empty bodies, unicode and dot-segment
paths, temporary credentials. The client signs every try anew, and finds its credentials and region as the module
docstring of seglog_client.credentials says."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import botocore.auth
import botocore.credentials
import pytest
from botocore.awsrequest import AWSRequest
from fake_api import KEYS, FakeApi, Reply, created, fake

from seglog_client import Backoff, Credentials, NoCredentialsError, SeglogClient
from seglog_client import credentials as creds
from seglog_client.sigv4 import canonical_path, canonical_query, sign

__all__ = ["fake"]

NOW = datetime(2026, 11, 22, 9, 30, 15, tzinfo=UTC)
TEMPORARY = Credentials("ASIAEXAMPLE", "secret/with+chars=", "FwoGZXIvYXdzEJr//////////token+/=")
API = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"


def botocore_authorization(method: str, url: str, headers: dict[str, str], body: bytes | None,
                           credentials: Credentials, region: str, monkeypatch: pytest.MonkeyPatch,
                           params: dict[str, str] | None = None) -> str:
    """The Authorization header botocore's SigV4Auth puts on the same request at the same moment."""
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: NOW.replace(tzinfo=None))
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body or b"", params=params or {})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(credentials.access_key_id,
                                                             credentials.secret_access_key,
                                                             credentials.session_token),
                            "execute-api", region).add_auth(request)
    return str(request.headers["Authorization"])


CASES: list[tuple[str, str, str, dict[str, str], bytes | None, Credentials]] = [
    ("a POST with a JSON body", "POST", f"{API}/sheets/3f0c8a34/entries",
     {"content-type": "application/json", "accept": "application/json"}, b'{"entry":{"type":"set","value":5}}', KEYS),
    ("a GET without a body", "GET", f"{API}/sheets/3f0c8a34", {"accept": "application/json"}, None, KEYS),
    ("an empty POST body", "POST", f"{API}/sheets", {"content-type": "application/json"}, b"", KEYS),
    ("a query: repeated names, sorted by value, empty values, reserved characters encoded", "GET",
     f"{API}/sheets/x/entries?segment=0&after=17&b=2&a=z&a=1&empty=&slash=%2F&plus=%2B&tilde=~&pct=%25", {}, None,
     KEYS),
    ("a unicode path, percent-encoded and then encoded again", "GET", f"{API}/caf%C3%A9/%E2%9C%93/a%20b", {}, None,
     KEYS),
    ("a raw unicode path", "GET", f"{API}/café/✓", {}, None, KEYS),
    ("dot segments and repeated slashes", "GET", f"{API}/a/./b//c/../d/", {}, None, KEYS),
    ("headers with runs of spaces and a non-default port", "PUT", "http://127.0.0.1:4599/sheets",
     {"x-custom": "  one   two  ", "content-type": "text/csv"}, b"a,b\n1,2\n", KEYS),
    ("temporary credentials: the token is sent and signed", "POST", f"{API}/sheets",
     {"content-type": "application/json"}, b"{}", TEMPORARY),
]


@pytest.mark.parametrize(("case", "method", "url", "headers", "body", "credentials"), CASES,
                         ids=[c[0] for c in CASES])
def test_authorization_equals_botocore_sigv4auth(case: str, method: str, url: str, headers: dict[str, str],
                                                 body: bytes | None, credentials: Credentials,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ours = sign(method, url, headers, body, credentials, region="eu-west-1", now=NOW)
    assert botocore_authorization(method, url, headers, body, credentials, "eu-west-1", monkeypatch) == \
        ours["authorization"]
    assert "20261122T093015Z" == ours["x-amz-date"]
    assert credentials.session_token == ours.get("x-amz-security-token")


@pytest.mark.parametrize("space", ["%20", "+"])
def test_odd_query_characters_encode_as_botocore_encodes_parameters(space: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore encodes ``params`` itself (RFC 3986 unreserved kept): a URL carrying them in any other valid
    encoding canonicalizes to the same string, so the signatures match. A space may travel as ``+``: a raw ``+``
    is a space, as API Gateway hands it to the function (seglog_awsmodel.events.api_gateway.query_pairs); a plus
    travels as ``%2B``."""
    params = {"a b": "c d", "é": "✓", "x": "1/2+3", "t": "~-._", "empty": "", "q": "SELECT * FROM t;"}
    sent = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}".replace("%20", space) for k, v in params.items())
    ours = sign("GET", f"{API}/search?{sent}", {}, None, KEYS, region="eu-west-1", now=NOW)
    assert botocore_authorization("GET", f"{API}/search", {}, None, KEYS, "eu-west-1", monkeypatch,
                                  params=params) == ours["authorization"]


def test_canonical_forms_follow_the_sigv4_rules() -> None:
    assert "/a/d/" == canonical_path("/a/./b/../d//")
    assert "/caf%25C3%25A9" == canonical_path("/caf%C3%A9")  # "encoded twice" for every service but S3
    assert "/" == canonical_path("")
    assert "a=%20&a=%2B&b=~&c=" == canonical_query("b=%7E&a=%2B&a=%20&c")
    assert "q=a%20b" == canonical_query("q=a+b")  # a raw "+" is a space, never a plus
    assert "" == canonical_query("")


def test_the_client_signs_every_try_anew(fake: FakeApi) -> None:
    """A lost answer is retried with the same body but a fresh date and signature: a retry after a long backoff
    must not carry a stale date (a signature older than 5 minutes is refused)."""
    moments = iter([NOW, NOW + timedelta(seconds=400)])
    client = SeglogClient(fake.url, credentials=KEYS, clock=lambda: next(moments), sleep=lambda _: None,
                          backoff=Backoff(base=0.0, cap=0.0, rng=random.Random(1)))
    fake.script(Reply(503, {"message": "Service Unavailable"}), created("3f0c8a34-4b5e-4c1b-9d2a-1f6e0b7c9a01"))
    client.create("3f0c8a34-4b5e-4c1b-9d2a-1f6e0b7c9a01")
    first, second = fake.sent("POST")
    assert first.body == second.body
    assert ("20261122T093015Z", "20261122T093655Z") == (first.headers["x-amz-date"], second.headers["x-amz-date"])
    assert first.headers["authorization"] != second.headers["authorization"]
    assert first.headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261122/us-east-1/execute-api/aws4_request, "
        "SignedHeaders=accept;content-type;host;x-amz-date, Signature=")


def test_an_upload_put_to_s3_is_not_signed_by_the_client(fake: FakeApi) -> None:
    """The presigned URL authorizes the PUT (its signature covers its own headers): an Authorization header of
    ours would make S3 refuse it."""
    client = SeglogClient(fake.url, credentials=KEYS, sleep=lambda _: None)
    fake.script(Reply(200, {"latest": None, "segments": [], "pending": []}),
                Reply(201, {"upload_id": "0b6f2c9e-1d3a-4f5b-8e7c-2a9d4b6c8e10", "key": "k", "url": f"{fake.url}/put",
                            "method": "PUT", "headers": {"Content-Type": "text/csv"}, "expires_in": 900}),
                Reply(200, b""),
                Reply(200, {"segment": 0, "num": 1, "entry_id": "7d9e1c2b-0a4f-4e3d-8c5b-6a7f8e9d0c12",
                            "deduplicated": False, "attempts": 1, "position": {"segment": 0, "num": 1}}))
    client.upload("3f0c8a34-4b5e-4c1b-9d2a-1f6e0b7c9a01", b"a\n1\n", "text/csv", "imp")
    (put,) = fake.sent("PUT")
    signed = [r for r in fake.requests if r.method != "PUT"]
    assert ("authorization" not in put.headers, all("authorization" in r.headers for r in signed)) == (True, True)



# ------------------------------------------------------------------------------------------ where credentials come from


def test_credentials_come_from_the_standard_environment_variables() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}
    assert Credentials("AKIDENV", "s", "t") == creds.resolve(environ=env)()
    assert KEYS == creds.resolve(KEYS, environ=env)()  # given ones win


def test_without_credentials_anywhere_the_error_says_where_to_put_them(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Any) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    # botocore's chain finds nothing either: empty config files, no container or instance metadata to ask.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(NoCredentialsError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        creds.resolve(environ={})
    with pytest.raises(NoCredentialsError, match=r"profile \(nobody\) could not be found"):
        creds.resolve(profile="nobody", environ={})


def test_a_profile_is_read_through_botocore(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    (tmp_path / "credentials").write_text("[dev]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = p\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert Credentials("AKIDPROFILE", "p") == creds.resolve(profile="dev", environ={"AWS_ACCESS_KEY_ID": "no",
                                                                                    "AWS_SECRET_ACCESS_KEY": "no"})()


def test_signing_with_environment_credentials_never_imports_botocore() -> None:
    """botocore is optional: a client whose credentials are in the environment signs without it."""
    code = ("import sys; from seglog_client import credentials, sigv4; "
            "c = credentials.resolve(environ={'AWS_ACCESS_KEY_ID': 'a', 'AWS_SECRET_ACCESS_KEY': 'b'})(); "
            "sigv4.sign('GET', 'http://127.0.0.1:4599/x', {}, None, c, region='us-east-1'); "
            "print('botocore' in sys.modules)")
    assert "False" == subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout.strip()


def test_the_region_is_the_apis_own_when_its_url_says_it() -> None:
    assert "eu-west-1" == creds.region_for(API + "/sheets", "us-west-2", {})
    assert "us-west-2" == creds.region_for("http://127.0.0.1:4599", "us-west-2", {"AWS_REGION": "ap-south-1"})
    assert "ap-south-1" == creds.region_for("http://127.0.0.1:4599", None, {"AWS_REGION": "ap-south-1"})
    assert "us-east-1" == creds.region_for("https://api.example.com", None, {})
