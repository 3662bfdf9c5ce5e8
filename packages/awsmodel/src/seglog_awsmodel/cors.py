"""CORS of an HTTP API, as API Gateway applies a CorsConfiguration (Amazon API Gateway Developer Guide, "Configure
CORS for HTTP APIs in API Gateway", https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html):

* "If you configure CORS for an API, API Gateway automatically sends a response to preflight OPTIONS requests,
  even if there isn't an OPTIONS route configured for your API" — without invoking a function and without
  authorization. A route whose method is ANY (or the $default route) does catch OPTIONS, and then the preflight
  goes to the function through the route's authorizer: which is why the template gives the API function one
  route per method (:func:`seglog_awsmodel.events.api_gateway.match_route` matches OPTIONS to no route of ours).
* "For a CORS request, API Gateway adds the configured CORS headers to the response from an integration", and
  "ignores CORS headers returned from your backend integration".
* "To return CORS headers, your request must contain an origin header. For the OPTIONS method, your request must
  contain an origin header and an Access-Control-Request-Method header."
* allowOrigins may hold ``*`` (any origin), ``https://*`` or ``http://*`` (any origin of that scheme).

An origin the configuration does not allow gets no CORS header at all, so the browser refuses the response. The
preflight answer's status is 204 (no body), as API Gateway sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

PREFLIGHT_STATUS: Final = 204
_CORS_PREFIX: Final = "access-control-"


@dataclass(frozen=True, kw_only=True)
class CorsConfiguration:
    """An HttpApi's CorsConfiguration (SAM: sam-property-httpapi-httpapicorsconfiguration), AWS's names."""

    AllowOrigins: tuple[str, ...] = ()
    AllowHeaders: tuple[str, ...] = ()
    AllowMethods: tuple[str, ...] = ()
    ExposeHeaders: tuple[str, ...] = ()
    MaxAge: int | None = None
    AllowCredentials: bool = False

    def allows(self, origin: str) -> bool:
        """Whether ``origin`` is one of AllowOrigins (``*``, ``https://*`` and ``http://*`` are wildcards)."""
        wanted = origin.lower()
        for allowed in self.AllowOrigins:
            pattern = allowed.lower()
            if pattern == "*" or pattern == wanted:
                return True
            if pattern.endswith("://*") and wanted.startswith(pattern[:-1]):
                return True
        return False

    def _allow_origin(self, origin: str) -> str:
        # A request with credentials cannot be answered with "*" (the Fetch standard), so "*" stands for the
        # origin itself when AllowCredentials is set.
        return "*" if "*" in self.AllowOrigins and not self.AllowCredentials else origin

    def preflight(self, headers: Mapping[str, str]) -> list[tuple[str, str]]:
        """The headers of the answer to a preflight request (``headers`` lower-cased); none for a refused origin."""
        origin = headers.get("origin", "")
        if not origin or not self.allows(origin):
            return []
        out = [("access-control-allow-origin", self._allow_origin(origin))]
        if self.AllowCredentials:
            out.append(("access-control-allow-credentials", "true"))
        if self.AllowMethods:
            out.append(("access-control-allow-methods", ",".join(self.AllowMethods)))
        if self.AllowHeaders:
            requested = headers.get("access-control-request-headers", "")
            allowed = requested if "*" in self.AllowHeaders and requested else ",".join(self.AllowHeaders)
            out.append(("access-control-allow-headers", allowed))
        if self.MaxAge is not None:
            out.append(("access-control-max-age", str(self.MaxAge)))
        return out

    def response(self, headers: Mapping[str, str], answer: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``answer`` (a function's response headers) with its own CORS headers dropped and the configured ones
        added when the request came from an allowed origin."""
        kept = [(name, value) for name, value in answer if not name.lower().startswith(_CORS_PREFIX)]
        origin = headers.get("origin", "")
        if not origin or not self.allows(origin):
            return kept
        kept.append(("access-control-allow-origin", self._allow_origin(origin)))
        if self.AllowCredentials:
            kept.append(("access-control-allow-credentials", "true"))
        if self.ExposeHeaders:
            kept.append(("access-control-expose-headers", ",".join(self.ExposeHeaders)))
        return kept


def is_preflight(method: str, headers: Mapping[str, str]) -> bool:
    """An OPTIONS request with Origin and Access-Control-Request-Method (lower-cased ``headers``)."""
    return method.upper() == "OPTIONS" and bool(headers.get("origin")) and \
        bool(headers.get("access-control-request-method"))
