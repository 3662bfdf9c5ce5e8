"""AWS Signature Version 4 for the seglog HTTP API (service ``execute-api``): one implementation of the canonical
request, the string to sign and the signature, which the client signs with and the emulator's gateway verifies
with (:mod:`seglog_emulator.api_auth`), so the two can only disagree where a request was changed on its way.

It follows "Create a signed AWS API request" (IAM User Guide,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html) and is tested against
botocore's ``SigV4Auth`` (``tests/client/test_sigv4.py``):

* the path is normalized (dot segments and repeated slashes removed) and URI-encoded once more, as every service
  but S3 expects ("Each path segment must be URI-encoded twice");
* query parameters are decoded, re-encoded with RFC 3986's unreserved characters kept (a space is ``%20``, a
  ``+`` is ``%2B``), and sorted by name, then value. A ``+`` left raw in a query string decodes as a space, as
  API Gateway decodes it into the ``queryStringParameters`` the function gets: a signature then covers the value
  the function acts on (the gateway checks it against those very pairs: :mod:`seglog_emulator.api_auth`);
  encode a plus as ``%2B``, a space as ``%20`` ("Encode the space character as '%20' (and not '+', as some
  encoding schemes do)", on the page above);
* headers are lower-cased, their values trimmed and inner runs of spaces squeezed, repeats joined by commas;
* the payload hash is the SHA-256 of the body as sent: API Gateway computes it itself (``UNSIGNED-PAYLOAD`` is
  for S3), so a body changed after signing changes the canonical request.

Only the standard library: the client stays msgspec + structlog.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final
from urllib.parse import parse_qsl, quote, urlsplit

ALGORITHM: Final = "AWS4-HMAC-SHA256"
#: API Gateway's signing name ("execute-api:Invoke" is the permission it checks).
SERVICE: Final = "execute-api"
TERMINATOR: Final = "aws4_request"
AMZ_DATE_FORMAT: Final = "%Y%m%dT%H%M%SZ"
EMPTY_SHA256: Final = hashlib.sha256(b"").hexdigest()
#: Headers a client never signs: hop-by-hop headers a proxy may rewrite, and the user agent (botocore's
#: SIGNED_HEADERS_BLACKLIST, the same list).
UNSIGNED_HEADERS: Final = frozenset({
    "authorization", "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
})
_UNRESERVED: Final = "-_.~"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Credentials:
    """An AWS access key, its secret, and the session token of temporary credentials (never shown in a repr)."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The credential scope: ``20260101/us-east-1/execute-api/aws4_request``."""

    date: str
    region: str
    service: str = SERVICE

    def __str__(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/{TERMINATOR}"


# ------------------------------------------------------------------------------------------- canonical form


def canonical_path(raw_path: str) -> str:
    """The path as sent (percent-encoding kept), normalized, then URI-encoded again."""
    segments: list[str] = []
    for segment in (raw_path or "/").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    path = "/" + "/".join(segments)
    if raw_path.endswith("/") and segments:
        path += "/"
    return quote(path, safe="/~")


def canonical_query(raw_query: str) -> str:
    """The query string's parameters decoded (``+`` as a space), re-encoded as SigV4 encodes them, sorted by name
    then value."""
    return canonical_query_of(parse_qsl(raw_query, keep_blank_values=True))


def canonical_query_of(pairs: Iterable[tuple[str, str]]) -> str:
    """The canonical query string of decoded (name, value) pairs: each encoded as SigV4 encodes them (RFC 3986's
    unreserved characters kept), sorted by name then value."""
    encoded = sorted((quote(name, safe=_UNRESERVED), quote(value, safe=_UNRESERVED)) for name, value in pairs)
    return "&".join(f"{name}={value}" for name, value in encoded)


def header_map(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Header names lower-cased, values trimmed with inner whitespace squeezed, repeated names joined by commas."""
    joined: dict[str, str] = {}
    for name, value in headers.items() if isinstance(headers, Mapping) else headers:
        key = name.lower().strip()
        clean = " ".join(value.split())
        joined[key] = f"{joined[key]},{clean}" if key in joined else clean
    return joined


def canonical_request(method: str, raw_path: str, query: str | Iterable[tuple[str, str]],
                      headers: Mapping[str, str], signed_headers: Iterable[str], payload_hash: str) -> str:
    """The canonical request of SigV4; ``query`` the query string as sent, or its decoded (name, value) pairs;
    ``headers`` as :func:`header_map` makes them (a signed header the request lacks counts as empty, so the
    signature cannot match)."""
    names = sorted(signed_headers)
    lines = "".join(f"{name}:{headers.get(name, '')}\n" for name in names)
    canonical = canonical_query(query) if isinstance(query, str) else canonical_query_of(query)
    return "\n".join((method.upper(), canonical_path(raw_path), canonical, lines, ";".join(names), payload_hash))


def string_to_sign(amz_date: str, scope: Scope, canonical: str) -> str:
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{digest}"


@lru_cache(maxsize=64)
def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    # Derived once per key, day, region and service: four HMACs saved on every later request of the day.
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, TERMINATOR):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def signature(secret_access_key: str, scope: Scope, to_sign: str) -> str:
    key = _signing_key(secret_access_key, scope.date, scope.region, scope.service)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def payload_hash(body: bytes | None) -> str:
    return hashlib.sha256(body).hexdigest() if body else EMPTY_SHA256


def host_header(url: str) -> str:
    """The Host a request to ``url`` carries: lower-case, the port only when it is not the scheme's default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


# ------------------------------------------------------------------------------------------- signing


def sign(method: str, url: str, headers: Mapping[str, str], body: bytes | None, credentials: Credentials, *,
         region: str, service: str = SERVICE, now: datetime | None = None) -> dict[str, str]:
    """The headers to send ``method url`` with: ``headers`` plus ``host``, ``x-amz-date``, the session token if
    any, and ``authorization``. Every header given is signed (except :data:`UNSIGNED_HEADERS`), so none of them,
    nor the method, path, query or body, can change on the way without the signature failing.

    Call it for every try: the date moves, and a signature older than five minutes is refused.
    """
    parts = urlsplit(url)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    amz_date = moment.strftime(AMZ_DATE_FORMAT)
    scope = Scope(date=amz_date[:8], region=region, service=service)
    out = {name: value for name, value in headers.items()
           if name.lower() not in ("authorization", "host", "x-amz-date", "x-amz-security-token")}
    out["host"] = host_header(url)
    out["x-amz-date"] = amz_date
    if credentials.session_token:
        out["x-amz-security-token"] = credentials.session_token
    signed = header_map((name, value) for name, value in out.items() if name.lower() not in UNSIGNED_HEADERS)
    canonical = canonical_request(method, parts.path, parts.query, signed, signed, payload_hash(body))
    proof = signature(credentials.secret_access_key, scope, string_to_sign(amz_date, scope, canonical))
    out["authorization"] = (f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, "
                            f"SignedHeaders={';'.join(sorted(signed))}, Signature={proof}")
    return out
