"""IAM authorization of the local gateway: SigV4 verified as API Gateway verifies it for an HTTP API route whose
authorizer is AWS_IAM (Amazon API Gateway Developer Guide, "Control access to HTTP APIs with IAM authorization",
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-access-control-iam.html: "clients must use
Signature Version 4 (SigV4) to sign their requests with AWS credentials").

The canonical request and the signature come from :mod:`seglog_client.sigv4`, the code the client signs with. The
keys accepted are the emulator's configuration (:attr:`seglog_emulator.settings.EmulatorSettings.api_credentials`,
by default the pair the local stack accepts). A refusal is 403 with API Gateway's JSON body and its
``x-amzn-ErrorType``; the texts are the ones API Gateway answers, as its users report them:

* no ``Authorization`` header: ``{"message":"Forbidden"}`` (an HTTP API's answer; a REST API says "Missing
  Authentication Token");
* a signature that does not match: InvalidSignatureException "The request signature we calculated does not match
  the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service
  documentation for details." followed by the canonical string and string-to-sign it expected (as execute-api
  answers: mhart/aws4 issue 33, aws/aws-sdk-js issue 2372);
* an access key it does not know, or a session token that is not the key's: UnrecognizedClientException "The
  security token included in the request is invalid." (badslug/Paw-AWSSignature4DynamicValue issue 5);
* a date more than 5 minutes off: "Signature expired: {date} is now earlier than {now - 5 min} ({now} - 5 min.)"
  (mhart/aws4 issue 118) or "Signature not yet current: {date} is still later than {now + 5 min} ({now} + 5 min.)"
  (NickWaterton/Roomba980-Python issue 118);
* a scope of another region or service: "Credential should be scoped to a valid region, not '{region}'. " and
  "Credential should be scoped to correct service: 'execute-api'. " (joona/aws-es-curl issue 15);
* a malformed header: IncompleteSignatureException "Authorization header requires 'Credential' parameter. ...",
  "'{pair}' not a valid key=value pair (missing equal-sign) in Authorization header: '{header}'."
  (RhinoSecurityLabs/IPRotate_Burp_Extension issue 25).

Not emulated: permissions (every accepted key may invoke every route: locally there is no IAM policy of the
caller to evaluate) and presigned query-string authentication.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Final

from seglog_awsmodel.events.api_gateway import LOCAL_ACCOUNT_ID
from seglog_client import sigv4
from seglog_client.sigv4 import Credentials

#: How far a request's date may be from the gateway's clock, either way (the "5 min." of AWS's messages).
MAX_SKEW: Final = timedelta(minutes=5)
_JSON: Final = ("content-type", "application/json")
_MISMATCH: Final = ("The request signature we calculated does not match the signature you provided. Check your AWS "
                    "Secret Access Key and signing method. Consult the service documentation for details.")
_INVALID_TOKEN: Final = "The security token included in the request is invalid."


@dataclass(frozen=True, kw_only=True)
class Caller:
    """An identity the gateway accepts: its key pair, and who it is (the local stack's root user by default)."""

    credentials: Credentials
    account_id: str = LOCAL_ACCOUNT_ID

    @property
    def user_arn(self) -> str:
        return f"arn:aws:iam::{self.account_id}:root"

    def iam_context(self) -> dict[str, Any]:
        """``requestContext.authorizer.iam`` of the event, the fields API Gateway fills for an IAM-authorized
        request (payload format 2.0; the account's root user's id is the account id)."""
        return {"accessKey": self.credentials.access_key_id, "accountId": self.account_id,
                "callerId": self.account_id, "cognitoIdentity": None, "principalOrgId": None,
                "userArn": self.user_arn, "userId": self.account_id}


@dataclass(frozen=True)
class Refusal:
    """API Gateway's answer to a request its authorizer refused."""

    error_type: str
    message: str
    status: int = 403

    def response(self) -> tuple[int, list[tuple[str, str]], bytes]:
        return (self.status, [_JSON, ("x-amzn-errortype", self.error_type)],
                json.dumps({"message": self.message}, separators=(",", ":")).encode())


@dataclass(frozen=True)
class _Authorization:
    access_key_id: str
    scope: sigv4.Scope
    signed_headers: tuple[str, ...]
    signature: str


class IamAuthorizer:
    """Verifies SigV4 signatures of requests for ``region``'s execute-api with the ``callers``' keys.

    Args:
        clock: epoch seconds (tests move it to show the 5-minute window).
    """

    def __init__(self, callers: Sequence[Caller], *, region: str, service: str = sigv4.SERVICE,
                 clock: Callable[[], float] = time.time) -> None:
        self.callers = {c.credentials.access_key_id: c for c in callers}
        self.region = region
        self.service = service
        self.clock = clock

    @classmethod
    def accepting(cls, credentials: Sequence[Credentials], *, region: str) -> IamAuthorizer:
        return cls([Caller(credentials=c) for c in credentials], region=region)

    def authorize(self, method: str, raw_path: str, query: str | Sequence[tuple[str, str]],
                  headers: Mapping[str, str], body: bytes | None) -> Caller | Refusal:
        """The caller a request is signed by, or the refusal API Gateway would answer.

        Args:
            query: the query string's (name, value) pairs exactly as the function will get them
                (:func:`seglog_awsmodel.events.api_gateway.query_pairs`: ``+`` is a space; the gateway passes these),
                or the query string as sent, which :func:`seglog_client.sigv4.canonical_query` decodes the same
                way. The canonical query string is made of these values, so a signature covers the values the
                function acts on: a request signed for ``x%2By`` (a plus) and sent as ``x+y`` (a space, to the
                function) is refused, and one signed for ``x%20y`` and sent as ``x+y`` is accepted with the value
                it was signed for ("Create a signed AWS API request", IAM User Guide: a space is encoded ``%20``,
                never ``+``, in the canonical form).
            headers: the request's headers as :func:`seglog_client.sigv4.header_map` makes them.
        """
        header = headers.get("authorization")
        if not header:
            return Refusal("ForbiddenException", "Forbidden")
        parsed = _parse(header, headers)
        if isinstance(parsed, Refusal):
            return parsed
        amz_date = headers.get("x-amz-date") or _amz_date(headers.get("date", ""))
        refused = self._check_scope(parsed, amz_date) or self._check_time(amz_date)
        if refused is not None:
            return refused
        caller = self.callers.get(parsed.access_key_id)
        if caller is None or headers.get("x-amz-security-token") != caller.credentials.session_token:
            return Refusal("UnrecognizedClientException", _INVALID_TOKEN)
        if "host" not in parsed.signed_headers:
            return Refusal("InvalidSignatureException", "'Host' or ':authority' must be a 'SignedHeader' in the AWS "
                           "Authorization.")
        canonical = sigv4.canonical_request(method, raw_path, query, headers, parsed.signed_headers,
                                            sigv4.payload_hash(body))
        to_sign = sigv4.string_to_sign(amz_date, parsed.scope, canonical)
        expected = sigv4.signature(caller.credentials.secret_access_key, parsed.scope, to_sign)
        if not hmac.compare_digest(expected, parsed.signature):
            return Refusal("InvalidSignatureException",
                           f"{_MISMATCH}\n\nThe Canonical String for this request should have been\n'{canonical}'\n\n"
                           f"The String-to-Sign should have been\n'{to_sign}'\n")
        return caller

    def _check_scope(self, parsed: _Authorization, amz_date: str) -> Refusal | None:
        scope = parsed.scope
        if scope.region != self.region:
            return Refusal("InvalidSignatureException",
                           f"Credential should be scoped to a valid region, not '{scope.region}'. ")
        if scope.service != self.service:
            return Refusal("InvalidSignatureException",
                           f"Credential should be scoped to correct service: '{self.service}'. ")
        if scope.date != amz_date[:8]:
            return Refusal("InvalidSignatureException",
                           f"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from "
                           f"HTTP: '{scope.date}' != '{amz_date[:8]}', from '{amz_date}'.")
        return None

    def _check_time(self, amz_date: str) -> Refusal | None:
        try:
            signed = datetime.strptime(amz_date, sigv4.AMZ_DATE_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            return Refusal("IncompleteSignatureException",
                           f"Date must be in ISO-8601 'basic format'. Got '{amz_date}'. See "
                           "http://en.wikipedia.org/wiki/ISO_8601")
        now = datetime.fromtimestamp(int(self.clock()), UTC)
        if signed < now - MAX_SKEW:
            return Refusal("InvalidSignatureException", f"Signature expired: {amz_date} is now earlier than "
                           f"{_basic(now - MAX_SKEW)} ({_basic(now)} - 5 min.)")
        if signed > now + MAX_SKEW:
            return Refusal("InvalidSignatureException", f"Signature not yet current: {amz_date} is still later than "
                           f"{_basic(now + MAX_SKEW)} ({_basic(now)} + 5 min.)")
        return None


def _parse(header: str, headers: Mapping[str, str]) -> _Authorization | Refusal:
    """``AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/execute-api/aws4_request, SignedHeaders=a;b,
    Signature=hex`` taken apart, or the IncompleteSignatureException API Gateway answers for it."""
    algorithm, _, rest = header.strip().partition(" ")
    fields: dict[str, str] = {}
    if algorithm == sigv4.ALGORITHM:
        for pair in (p.strip() for p in rest.split(",")):
            name, sep, value = pair.partition("=")
            if not sep:
                return Refusal("IncompleteSignatureException", f"'{pair}' not a valid key=value pair (missing "
                               f"equal-sign) in Authorization header: '{header}'.")
            fields[name.strip()] = value.strip()
    missing = [f"Authorization header requires '{name}' parameter. "
               for name in ("Credential", "Signature", "SignedHeaders") if not fields.get(name)]
    if not headers.get("x-amz-date") and not headers.get("date"):
        missing.append("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ")
    if missing:
        return Refusal("IncompleteSignatureException", "".join(missing) + f"Authorization={header}")
    key, *scope = fields["Credential"].split("/")
    if len(scope) != 4 or scope[3] != sigv4.TERMINATOR:
        return Refusal("IncompleteSignatureException",
                       f"Credential should be scoped with a valid terminator: '{sigv4.TERMINATOR}', not "
                       f"'{scope[-1] if scope else ''}'. ")
    return _Authorization(access_key_id=key, scope=sigv4.Scope(date=scope[0], region=scope[1], service=scope[2]),
                          signed_headers=tuple(fields["SignedHeaders"].lower().split(";")),
                          signature=fields["Signature"])


def _amz_date(date_header: str) -> str:
    """An RFC 1123 ``Date`` header (the alternative to X-Amz-Date SigV4 allows) in SigV4's basic format."""
    try:
        return parsedate_to_datetime(date_header).astimezone(UTC).strftime(sigv4.AMZ_DATE_FORMAT)
    except (TypeError, ValueError):
        return date_header


def _basic(moment: datetime) -> str:
    return moment.strftime(sigv4.AMZ_DATE_FORMAT)
