"""The HTTP API of the template as the emulator's gateway enforces it: each route's authorizer after SAM's rules and
the API's CorsConfiguration, parameters resolved (SAM: sam-resource-httpapi, sam-property-httpapi-httpapiauth,
sam-property-httpapi-httpapicorsconfiguration, sam-property-function-httpapi)."""

from __future__ import annotations

from typing import Any

from test_config import FakeResolver, config, make_template, problems, read, template

from seglog_awsmodel.config import AWS_IAM, EmulatorConfig, HttpApiSpec
from seglog_awsmodel.cors import CorsConfiguration
from seglog_awsmodel.template import Template

__all__ = ["config", "template"]


def test_the_templates_api_requires_iam_and_allows_the_parameters_origin(template: Template,
                                                                          config: EmulatorConfig) -> None:
    """AllowHeaders cover SigV4's headers, so a browser may send a signed request; the origin is the
    ApiCorsAllowOrigin parameter's, and an override changes it."""
    cors = CorsConfiguration(AllowOrigins=("http://localhost:3000",),
                             AllowHeaders=("authorization", "content-type", "x-amz-date", "x-amz-security-token",
                                           "x-amz-content-sha256"),
                             AllowMethods=("GET", "POST", "OPTIONS"), MaxAge=600)
    access_log = template.resources["HttpApi"]["Properties"]["AccessLogSettings"]["Format"]
    assert {"HttpApi": HttpApiSpec(logical_id="HttpApi", DefaultAuthorizer=AWS_IAM, EnableIamAuthorizer=True,
                                   CorsConfiguration=cors, AccessLogFormat=access_log)} == config.http_apis
    overridden = EmulatorConfig.from_template(template, FakeResolver(),
                                              parameters={"ApiCorsAllowOrigin": "https://app.example.com"})
    cors_of_override = overridden.http_apis["HttpApi"].CorsConfiguration
    assert cors_of_override is not None and ("https://app.example.com",) == cors_of_override.AllowOrigins


def api(auth: dict[str, Any] | None = None, **props: Any) -> dict[str, Any]:
    return {"Api": {"Type": "AWS::Serverless::HttpApi", "Properties": {**({"Auth": auth} if auth else {}), **props}}}


def route(**props: Any) -> dict[str, Any]:
    return {"Http": {"Type": "HttpApi", "Properties": {"Path": "/x", "Method": "GET", "ApiId": {"Ref": "Api"},
                                                      **props}}}


IAM = {"EnableIamAuthorizer": True, "DefaultAuthorizer": "AWS_IAM"}


def test_a_route_takes_the_apis_default_authorizer_and_none_opens_it() -> None:
    guarded = read(make_template(route(), extra=api(IAM))).http_routes[0]
    opened = read(make_template(route(Auth={"Authorizer": "NONE"}), extra=api(IAM))).http_routes[0]
    implicit = read(make_template({"Http": {"Type": "HttpApi", "Properties": {"Path": "/x", "Method": "GET"}}}))
    assert (AWS_IAM, None, None) == (guarded.Authorizer, opened.Authorizer, implicit.http_routes[0].Authorizer)


def test_iam_without_enable_iam_authorizer_is_refused() -> None:
    """sam-property-httpapi-httpapiauth: AWS_IAM is a default authorizer only "if EnableIamAuthorizer is set to
    true" (and a route's Auth.Authorizer AWS_IAM needs it too)."""
    assert any("needs Auth.EnableIamAuthorizer" in p
               for p in problems(make_template(route(), extra=api({"DefaultAuthorizer": "AWS_IAM"}))))
    assert any("needs Auth.EnableIamAuthorizer" in p
               for p in problems(make_template(route(Auth={"Authorizer": "AWS_IAM"}), extra=api())))


def test_an_authorizer_the_emulator_cannot_enforce_is_refused_not_left_open() -> None:
    """A JWT or Lambda authorizer run as an open route would pass requests AWS refuses."""
    found = problems(make_template(route(), extra=api({"Authorizers": {"Jwt": {}}, "DefaultAuthorizer": "Jwt"})))
    assert any("authorizer 'Jwt' is not emulated" in p for p in found)


def test_an_api_id_must_name_an_httpapi_of_the_template() -> None:
    assert any("must be !Ref of an AWS::Serverless::HttpApi" in p
               for p in problems(make_template(route(ApiId={"Ref": "Queue"}))))


def test_cors_configuration_forms() -> None:
    """An origin as a string, true for every origin, or the object; unknown keys refused."""
    as_string = read(make_template(route(), extra=api(CorsConfiguration="https://a.example"))).http_apis["Api"]
    as_true = read(make_template(route(), extra=api(CorsConfiguration=True))).http_apis["Api"]
    assert (("https://a.example",), ("*",)) == (as_string.CorsConfiguration.AllowOrigins,  # type: ignore[union-attr]
                                               as_true.CorsConfiguration.AllowOrigins)  # type: ignore[union-attr]
    assert any("unknown keys ['AllowOrigin']" in p for p in problems(
        make_template(route(), extra=api(CorsConfiguration={"AllowOrigin": ["x"]}))))


def test_cors_answers_only_allowed_origins_and_replaces_the_functions_own_cors_headers() -> None:
    """http-api-cors: "API Gateway ignores CORS headers returned from your backend integration"; wildcards
    https://* and http://* allow every origin of that scheme."""
    cors = CorsConfiguration(AllowOrigins=("https://*",), ExposeHeaders=("date",))
    answer = [("content-type", "application/json"), ("Access-Control-Allow-Origin", "*")]
    assert [("content-type", "application/json"), ("access-control-allow-origin", "https://a.example"),
            ("access-control-expose-headers", "date")] == cors.response({"origin": "https://a.example"}, answer)
    assert [("content-type", "application/json")] == cors.response({"origin": "http://a.example"}, answer)
    assert [("content-type", "application/json")] == cors.response({}, answer)
