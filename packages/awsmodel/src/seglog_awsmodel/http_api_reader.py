"""Reading the template's HTTP APIs: AWS::Serverless::HttpApi resources (their Auth and CorsConfiguration) and the
HttpApi events of functions (routes, and each route's authorizer by SAM's rules), and REST APIs:
AWS::Serverless::Api resources (their StageName) and the Api events of functions (a method on a resource), for
:class:`~seglog_awsmodel.template_reader.TemplateReader`, whose value helpers and problem list it shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from seglog_awsmodel.config import AWS_IAM, HttpApiSpec, HttpRoute
from seglog_awsmodel.cors import CorsConfiguration
from seglog_awsmodel.events.api_gateway_v1 import IMPLICIT_REST_STAGE

if TYPE_CHECKING:
    from seglog_awsmodel.template_reader import TemplateReader

HTTP_API_TYPE: Final = "AWS::Serverless::HttpApi"
REST_API_TYPE: Final = "AWS::Serverless::Api"
#: Api properties the emulator reads (sam-resource-api); the rest (definitions, domains, usage plans, ...) are noted.
_REST_API_PROPERTIES: Final = frozenset({"StageName", "Description", "Name"})
#: Api event properties the emulator reads (sam-property-function-api).
_REST_ROUTE_PROPERTIES: Final = frozenset({"Path", "Method", "RestApiId", "Auth"})
#: HttpApi properties the emulator reads (sam-resource-httpapi); the rest (stage, domain, access logs, ...) shape
#: the deployment, not what a request gets, and are noted.
_HTTP_API_PROPERTIES: Final = frozenset({"Auth", "CorsConfiguration", "Description", "AccessLogSettings"})
#: HttpApi event properties the emulator reads (sam-property-function-httpapi).
_ROUTE_PROPERTIES: Final = frozenset({"Path", "Method", "PayloadFormatVersion", "ApiId", "Auth"})
#: CorsConfiguration's keys (sam-property-httpapi-httpapicorsconfiguration).
_CORS_LISTS: Final = ("AllowOrigins", "AllowHeaders", "AllowMethods", "ExposeHeaders")
#: "Authorizer: NONE" opens a route of an API whose DefaultAuthorizer would guard it (sam-property-function-httpapi
#: HttpApiFunctionAuth).
_NONE: Final = "NONE"


class HttpApiReader:
    """Reads HttpApi resources and events on behalf of ``reader`` (its problems and notes are the reader's)."""

    def __init__(self, reader: TemplateReader) -> None:
        self.reader = reader
        self.apis: dict[str, HttpApiSpec] = {}
        #: The template's AWS::Serverless::Api resources: logical id -> StageName.
        self.rest_stages: dict[str, str] = {}

    def read_apis(self) -> dict[str, HttpApiSpec]:
        """Every AWS::Serverless::HttpApi of the template, by logical id."""
        if (self.reader.template.body.get("Globals") or {}).get("HttpApi"):
            self.reader._note("Globals.HttpApi: not emulated, ignored (set Auth and CorsConfiguration on the "
                              "HttpApi resource)")
        for logical, res in self.reader.resources.items():
            if res.get("Type") == HTTP_API_TYPE:
                self.apis[logical] = self._api(logical, res.get("Properties") or {})
            elif res.get("Type") == REST_API_TYPE:
                props = res.get("Properties") or {}
                self.reader._note_unread(props, _REST_API_PROPERTIES, logical)
                stage = self.reader._parameter(props.get("StageName"))
                if not isinstance(stage, str) or not stage:
                    self.reader._problem(f"{logical}.StageName: a REST API needs a stage name (a string)")
                    stage = IMPLICIT_REST_STAGE
                self.rest_stages[logical] = stage
        return self.apis

    def rest_route(self, function: str, event: str, props: Mapping[str, Any], where: str) -> HttpRoute | None:
        """An Api event: a method on a REST API's resource (sam-property-function-api). Path and Method are
        required; RestApiId names an AWS::Serverless::Api of the template, else the route is on SAM's implicit REST
        API, stage Prod. Auth.Authorizer AWS_IAM is enforced (SigV4); another authorizer is not emulated."""
        self.reader._note_unread(props, _REST_ROUTE_PROPERTIES, where)
        path, method = self.reader._parameter(props.get("Path")), self.reader._parameter(props.get("Method"))
        if not isinstance(path, str) or not path.startswith("/") or not isinstance(method, str):
            self.reader._problem(f"{where}: an Api event needs Path (starting with /) and Method, got "
                                 f"{path!r} and {method!r}")
            return None
        api_id = None
        raw = props.get("RestApiId")
        if raw is not None:
            ref = raw.get("Ref") if isinstance(raw, Mapping) and set(raw) == {"Ref"} else None
            if not isinstance(ref, str) or ref not in self.rest_stages:
                self.reader._problem(f"{where}.RestApiId: must be !Ref of an {REST_API_TYPE} of this template, "
                                     f"got {raw!r}")
                return None
            api_id = ref
        authorizer = self.reader._parameter((props.get("Auth") or {}).get("Authorizer"))
        if authorizer not in (None, _NONE, AWS_IAM):
            self.reader._note(f"{where}.Auth.Authorizer: {authorizer!r} is not emulated; the route is open")
        method = "ANY" if method.lower() == "any" else method.upper()
        return HttpRoute(function=function, event=event, Path=path, Method=method, PayloadFormatVersion="1.0",
                         ApiId=api_id, Authorizer=AWS_IAM if authorizer == AWS_IAM else None, Rest=True,
                         Stage=self.rest_stages.get(api_id, IMPLICIT_REST_STAGE) if api_id else IMPLICIT_REST_STAGE)

    def _api(self, logical: str, props: Mapping[str, Any]) -> HttpApiSpec:
        # sam-property-httpapi-httpapiauth: "You can specify AWS_IAM as a default authorizer if EnableIamAuthorizer
        # is set to true. Otherwise, specify an authorizer that you've defined in Authorizers."
        self.reader._note_unread(props, _HTTP_API_PROPERTIES, logical)
        auth = props.get("Auth") or {}
        enable_iam = self.reader._bool(auth.get("EnableIamAuthorizer", False), f"{logical}.Auth.EnableIamAuthorizer")
        default = self.reader._parameter(auth.get("DefaultAuthorizer"))
        if default is not None:
            default = self._authorizer(default, enable_iam, f"{logical}.Auth.DefaultAuthorizer")
        access = props.get("AccessLogSettings") or {}
        access_format = self.reader._parameter(access.get("Format"))
        if access and not isinstance(access_format, str):
            self.reader._problem(f"{logical}.AccessLogSettings.Format: a string is required (the log line's format)")
            access_format = None
        return HttpApiSpec(logical_id=logical, DefaultAuthorizer=default, EnableIamAuthorizer=enable_iam,
                           CorsConfiguration=self._cors(props.get("CorsConfiguration"), f"{logical}.CorsConfiguration"),
                           AccessLogFormat=access_format)

    def _authorizer(self, name: Any, enable_iam: bool, where: str) -> str | None:
        """AWS_IAM when allowed, None for NONE; an authorizer the emulator cannot enforce is a problem (running the
        route open would pass requests AWS refuses)."""
        if name == _NONE:
            return None
        if name == AWS_IAM:
            if not enable_iam:
                self.reader._problem(f"{where}: AWS_IAM needs Auth.EnableIamAuthorizer: true on the HttpApi "
                                     "(sam-property-httpapi-httpapiauth)")
            return AWS_IAM
        self.reader._problem(f"{where}: authorizer {name!r} is not emulated (only AWS_IAM or NONE); the local "
                             "gateway would let every request through")
        return None

    def _cors(self, value: Any, where: str) -> CorsConfiguration | None:
        # sam-property-httpapi-httpapicorsconfiguration: an object of these keys, or the origin to allow as a string;
        # true allows every origin (SAM's translator writes "*").
        value = self.reader._parameter(value)
        if value is None or value is False:
            return None
        if value is True:
            return CorsConfiguration(AllowOrigins=("*",))
        if isinstance(value, str):
            return CorsConfiguration(AllowOrigins=(value,))
        if not isinstance(value, Mapping):
            self.reader._problem(f"{where}: {value!r} is neither an object nor an origin")
            return None
        unknown = set(value) - {*_CORS_LISTS, "MaxAge", "AllowCredentials"}
        if unknown:
            self.reader._problem(f"{where}: unknown keys {sorted(unknown)}")
        lists = {key: self._strings(value.get(key), f"{where}.{key}") for key in _CORS_LISTS}
        max_age = None
        if value.get("MaxAge") is not None:
            max_age = self.reader._int(value["MaxAge"], f"{where}.MaxAge", low=-1, high=86400)
        return CorsConfiguration(**lists, MaxAge=max_age,
                                 AllowCredentials=self.reader._bool(value.get("AllowCredentials", False),
                                                                    f"{where}.AllowCredentials"))

    def _strings(self, value: Any, where: str) -> tuple[str, ...]:
        """A list of strings, each item's parameter reference resolved."""
        value = self.reader._parameter(value)
        if value is None:
            return ()
        items = [self.reader._parameter(item) for item in value] if isinstance(value, list) else None
        if items is None or not all(isinstance(item, str) for item in items):
            self.reader._problem(f"{where}: {value!r} is not a list of strings (or !Ref to String parameters)")
            return ()
        return tuple(items)

    # ------------------------------------------------------------------------------------ events

    def route(self, function: str, event: str, props: Mapping[str, Any], where: str) -> HttpRoute | None:
        # sam-property-function-httpapi: with neither Path nor Method, SAM routes every request that matches no
        # other route to the function (the $default route); PayloadFormatVersion defaults to "2.0". Without ApiId
        # the route belongs to SAM's implicit API, which has no authorizer.
        self.reader._note_unread(props, _ROUTE_PROPERTIES, where)
        path, method = props.get("Path"), props.get("Method")
        version = props.get("PayloadFormatVersion", "2.0")
        if path is None and method is None:
            path, method = "$default", "ANY"
        if not isinstance(path, str) or not isinstance(method, str):
            self.reader._problem(f"{where}: an HttpApi event names both Path and Method, or neither (the $default "
                                 "route)")
            return None
        if version not in ("1.0", "2.0"):
            self.reader._problem(f"{where}.PayloadFormatVersion: {version!r} is neither '1.0' nor '2.0'")
            return None
        api_id = self._api_id(props.get("ApiId"), f"{where}.ApiId")
        api = self.apis.get(api_id) if api_id is not None else None
        authorizer = api.DefaultAuthorizer if api is not None else None
        chosen = self.reader._parameter((props.get("Auth") or {}).get("Authorizer"))
        if chosen is not None:
            authorizer = self._authorizer(chosen, api is not None and api.EnableIamAuthorizer,
                                          f"{where}.Auth.Authorizer")
        return HttpRoute(function=function, event=event, Path=path, Method=method.upper(),
                         PayloadFormatVersion=version, ApiId=api_id, Authorizer=authorizer)

    def _api_id(self, value: Any, where: str) -> str | None:
        if value is None:
            return None
        ref = value.get("Ref") if isinstance(value, Mapping) and set(value) == {"Ref"} else None
        if not isinstance(ref, str) or ref not in self.apis:
            self.reader._problem(f"{where}: must be !Ref of an {HTTP_API_TYPE} of this template, got {value!r}")
            return None
        return ref
