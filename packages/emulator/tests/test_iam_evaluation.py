"""The emulator's IAM evaluator against AWS's documented evaluation cases (DESIGN §10.2).

Each case cites the IAM User Guide page it comes from (docs.aws.amazon.com/IAM/latest/UserGuide/<page>.html):

* reference_policies_evaluation-logic_policy-eval-denyallow, ..._policy-eval-basics: explicit deny wins, then an
  allow in an identity-based or a same-account resource-based policy, else implicit deny;
* reference_policies_evaluation-logic_AccessPolicyLanguage_Interplay: the AllowGetList / DenyReports example;
* reference_policies_elements_action, _notaction, _resource, _notresource, _principal: matching rules and examples;
* reference_policies_elements_condition_operators and reference_policies_condition-single-vs-multi-valued-context-keys:
  operators, missing keys, ...IfExists, Null, ForAllValues / ForAnyValue;
* the DynamoDB Developer Guide's transaction-apis-iam (Example 3) and the S3 User Guide's TLS-only bucket policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from seglog_emulator.errors import IamPolicyError
from seglog_emulator.iam.evaluation import FunctionPermissions, Outcome, PolicyType, evaluate
from seglog_emulator.iam.policy import Caller, Policy

ACCOUNT = "111122223333"
CALLER = Caller(session=f"arn:aws:sts::{ACCOUNT}:assumed-role/AppRole/app", role=f"arn:aws:iam::{ACCOUNT}:role/AppRole",
                account=ACCOUNT)
ALLOWED, EXPLICIT, IMPLICIT = Outcome.ALLOWED, Outcome.EXPLICIT_DENY, Outcome.IMPLICIT_DENY


def doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(action: Any, resource: Any = "*", **more: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **more}


def deny(action: Any, resource: Any = "*", **more: Any) -> dict[str, Any]:
    return {"Effect": "Deny", "Action": action, "Resource": resource, **more}


@dataclass(frozen=True)
class Case:
    """One documented request: the policies in force, the request, and what AWS decides."""

    source: str
    identity: list[dict[str, Any]]
    action: str
    resource: str
    expected: Outcome
    context: dict[str, tuple[str, ...]] = field(default_factory=dict)
    resource_policies: list[dict[str, Any]] = field(default_factory=list)


GET_LIST_DENY_REPORTS = doc({"Sid": "AllowGetList", **allow(["iam:Get*", "iam:List*"])},
                            {"Sid": "DenyReports", **deny("iam:*Report")})
CARLOS_USER = doc(allow(["s3:GetBucketLocation", "s3:ListAllMyBuckets"], "arn:aws:s3:::*"),
                  allow("s3:*", ["arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar*",
                                 "arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar*/*"]),
                  {"Sid": "DenyS3Logs", **deny("s3:*", "arn:aws:s3:::*log*")})
LOGS_BUCKET_POLICY = doc({"Effect": "Allow", "Principal": {"AWS": CALLER.role}, "Action": "s3:*",
                          "Resource": "arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar-logs/*"})
TLS_ONLY = doc({"Sid": "DenyInsecure", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
TRANSACTIONS_BLOCKED = doc(
    deny(["dynamodb:ConditionCheckItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
          "dynamodb:GetItem"], "arn:aws:dynamodb:*:*:table/table04",
         Condition={"ForAnyValue:StringEquals": {"dynamodb:EnclosingOperation": ["TransactWriteItems",
                                                                                  "TransactGetItems"]}}),
    allow(["dynamodb:ConditionCheckItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
           "dynamodb:GetItem"], "arn:aws:dynamodb:*:*:table/table04"))
TABLE04 = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/table04"

CASES = [
    # --- explicit and implicit denies (AccessPolicyLanguage_Interplay) ---------------------------------------
    Case("Interplay: AllowGetList allows iam:GetUser", [GET_LIST_DENY_REPORTS], "iam:GetUser", "*", ALLOWED),
    Case("Interplay: DenyReports explicitly denies iam:GetOrganizationsAccessReport", [GET_LIST_DENY_REPORTS],
         "iam:GetOrganizationsAccessReport", "*", EXPLICIT),
    Case("Interplay: iam:CreatePolicy is implicitly denied", [GET_LIST_DENY_REPORTS], "iam:CreatePolicy", "*",
         IMPLICIT),
    Case("Interplay: another policy allowing iam:GenerateCredentialReport cannot override DenyReports",
         [GET_LIST_DENY_REPORTS, doc(allow("iam:GenerateCredentialReport"))], "iam:GenerateCredentialReport", "*",
         EXPLICIT),
    Case("policy-eval-denyallow: no policy at all is an implicit deny", [], "s3:GetObject", "arn:aws:s3:::b/k",
         IMPLICIT),
    # --- identity-based and resource-based, same account (policy-eval-basics) -------------------------------
    Case("policy-eval-basics: Carlos may put to his own bucket", [CARLOS_USER], "s3:PutObject",
         "arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar/photo.jpg", ALLOWED),
    Case("policy-eval-basics: DenyS3Logs wins over the logs bucket's policy that allows him",
         [CARLOS_USER], "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar-logs/log.txt", EXPLICIT,
         resource_policies=[LOGS_BUCKET_POLICY]),
    Case("policy-eval-basics: a same-account resource-based allow suffices when no identity policy allows",
         [], "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket-carlossalazar-logs/log.txt", ALLOWED,
         resource_policies=[LOGS_BUCKET_POLICY]),
    Case("elements_principal: an account principal in an Allow only delegates to identity policies",
         [], "s3:GetObject", "arn:aws:s3:::b/k", IMPLICIT,
         resource_policies=[doc({"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "s3:*",
                                 "Resource": "arn:aws:s3:::b/*"})]),
    Case("elements_principal: an account principal in a Deny covers the account's roles",
         [doc(allow("s3:*"))], "s3:GetObject", "arn:aws:s3:::b/k", EXPLICIT,
         resource_policies=[doc({"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                                 "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"})]),
    Case("elements_principal: a statement naming another role does not apply", [], "s3:GetObject",
         "arn:aws:s3:::b/k", IMPLICIT,
         resource_policies=[doc({"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/Other"},
                                 "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"})]),
    Case("S3 User Guide (TLS-only bucket policy): over TLS the Deny does not apply", [doc(allow("s3:GetObject"))],
         "s3:GetObject", "arn:aws:s3:::b/k", ALLOWED, context={"aws:securetransport": ("true",)},
         resource_policies=[TLS_ONLY]),
    Case("S3 User Guide (TLS-only bucket policy): without TLS the Deny applies", [doc(allow("s3:GetObject"))],
         "s3:GetObject", "arn:aws:s3:::b/k", EXPLICIT, context={"aws:securetransport": ("false",)},
         resource_policies=[TLS_ONLY]),
    # --- Action / NotAction ---------------------------------------------------------------------------------
    Case("elements_action: action names are case-insensitive", [doc(allow("S3:getobject"))], "s3:GetObject",
         "arn:aws:s3:::b/k", ALLOWED),
    Case("condition_operators example iam:*AccessKey* matches iam:CreateAccessKey", [doc(allow("iam:*AccessKey*"))],
         "iam:CreateAccessKey", "*", ALLOWED),
    Case("elements_action: ? matches one character", [doc(allow("s3:?etObject"))], "s3:GetObject",
         "arn:aws:s3:::b/k", ALLOWED),
    Case("elements_action: a pattern of another service does not match", [doc(allow("sqs:*"))], "s3:GetObject",
         "arn:aws:s3:::b/k", IMPLICIT),
    Case("elements_notaction: Allow NotAction iam:* allows every other service",
         [doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})], "s3:GetObject", "arn:aws:s3:::b/k",
         ALLOWED),
    Case("elements_notaction: ... and allows no IAM action", [doc({"Effect": "Allow", "NotAction": "iam:*",
                                                                    "Resource": "*"})], "iam:CreateUser", "*",
         IMPLICIT),
    # --- Resource / NotResource -------------------------------------------------------------------------------
    Case("elements_resource: bucket/* covers the bucket's objects", [doc(allow("s3:GetObject",
                                                                             "arn:aws:s3:::amzn-s3-demo-bucket/*"))],
         "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/a/b.txt", ALLOWED),
    Case("elements_resource: bucket/* does not cover the bucket itself",
         [doc(allow("s3:ListBucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"))], "s3:ListBucket",
         "arn:aws:s3:::amzn-s3-demo-bucket", IMPLICIT),
    Case("elements_resource: * expands over slashes (bucket/*/test/*)",
         [doc(allow("s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/*/test/*"))], "s3:GetObject",
         "arn:aws:s3:::amzn-s3-demo-bucket/1/2/test/3/object.jpg", ALLOWED),
    Case("elements_resource: resource ARNs are case-sensitive (user/Bob)",
         [doc(allow("iam:GetUser", f"arn:aws:iam::{ACCOUNT}:user/Bob"))], "iam:GetUser",
         f"arn:aws:iam::{ACCOUNT}:user/bob", IMPLICIT),
    Case("elements_resource: a wildcard region and account segment", [doc(allow("dynamodb:PutItem",
                                                                                "arn:aws:dynamodb:*:*:table/table04"))],
         "dynamodb:PutItem", TABLE04, ALLOWED),
    Case("elements_resource: table/table04 does not cover another table",
         [doc(allow("dynamodb:PutItem", "arn:aws:dynamodb:*:*:table/table04"))], "dynamodb:PutItem",
         f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/table05", IMPLICIT),
    Case("elements_resource: a table's ARN does not cover its indexes", [doc(allow("dynamodb:Query", TABLE04))],
         "dynamodb:Query", f"{TABLE04}/index/byDate", IMPLICIT),
    Case("elements_resource: a segment wildcard stays in its segment",
         [doc(allow("sqs:SendMessage", "arn:aws:sqs:us-east-?:*:q"))], "sqs:SendMessage",
         f"arn:aws:sqs:us-east-10:{ACCOUNT}:q", IMPLICIT),
    Case("elements_notresource: Deny NotResource Payroll denies everything else",
         [doc(allow("s3:*"), {"Effect": "Deny", "Action": "s3:*",
                              "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"]})],
         "s3:GetObject", "arn:aws:s3:::HRBucket/Other/file", EXPLICIT),
    Case("elements_notresource: ... and leaves Payroll to the Allow",
         [doc(allow("s3:*"), {"Effect": "Deny", "Action": "s3:*",
                              "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"]})],
         "s3:GetObject", "arn:aws:s3:::HRBucket/Payroll/march.csv", ALLOWED),
    # --- Condition ------------------------------------------------------------------------------------------
    Case("condition_operators: StringEquals on a present key", [doc(allow("iam:*AccessKey*", Condition={
        "StringEquals": {"aws:PrincipalTag/job-category": "iamuser-admin"}}))], "iam:CreateAccessKey", "*", ALLOWED,
        context={"aws:principaltag/job-category": ("iamuser-admin",)}),
    Case("condition_operators: a missing key makes StringEquals false", [doc(allow("iam:*AccessKey*", Condition={
        "StringEquals": {"aws:PrincipalTag/job-category": "iamuser-admin"}}))], "iam:CreateAccessKey", "*", IMPLICIT),
    Case("condition_operators: condition keys are case-insensitive", [doc(allow("s3:GetObject", Condition={
        "StringEquals": {"AWS:PrincipalAccount": ACCOUNT}}))], "s3:GetObject", "arn:aws:s3:::b/k", ALLOWED,
        context={"aws:principalaccount": (ACCOUNT,)}),
    Case("condition_operators: a missing key makes StringNotLike true", [doc(deny("s3:*", Condition={
        "StringNotLike": {"s3:prefix": "home/*"}}), allow("s3:*"))], "s3:ListBucket", "arn:aws:s3:::b", EXPLICIT),
    Case("condition_operators: several values of one key match if any does", [doc(allow("s3:ListBucket", Condition={
        "StringLike": {"s3:prefix": ["home/*", "shared/*"]}}))], "s3:ListBucket", "arn:aws:s3:::b", ALLOWED,
        context={"s3:prefix": ("shared/docs",)}),
    Case("elements_condition: several keys must all hold", [doc(allow("s3:ListBucket", Condition={
        "StringLike": {"s3:prefix": "home/*"}, "NumericLessThanEquals": {"s3:max-keys": "10"}}))], "s3:ListBucket",
        "arn:aws:s3:::b", IMPLICIT, context={"s3:prefix": ("home/x",), "s3:max-keys": ("50",)}),
    Case("condition_operators: NumericLessThanEquals", [doc(allow("s3:ListBucket", Condition={
        "NumericLessThanEquals": {"s3:max-keys": "10"}}))], "s3:ListBucket", "arn:aws:s3:::b", ALLOWED,
        context={"s3:max-keys": ("5",)}),
    Case("condition_operators: ...IfExists is true when the key is missing", [doc(allow("ec2:RunInstances", Condition={
        "StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*"]}}))], "ec2:RunInstances", "*", ALLOWED),
    Case("condition_operators: ...IfExists still tests a present key", [doc(allow("ec2:RunInstances", Condition={
        "StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*"]}}))], "ec2:RunInstances", "*", IMPLICIT,
        context={"ec2:instancetype": ("m5.large",)}),
    Case("condition_operators: Null true when the key is absent", [doc(allow("s3:GetObject", Condition={
        "Null": {"aws:TokenIssueTime": "true"}}))], "s3:GetObject", "arn:aws:s3:::b/k", ALLOWED),
    Case("condition_operators: Null true fails when the key is present", [doc(allow("s3:GetObject", Condition={
        "Null": {"aws:TokenIssueTime": "true"}}))], "s3:GetObject", "arn:aws:s3:::b/k", IMPLICIT,
        context={"aws:tokenissuetime": ("2026-01-01T00:00:00Z",)}),
    Case("condition_operators: ArnLike matches segment by segment", [doc(allow("sqs:SendMessage", Condition={
        "ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-2:*:topic-*"}}))], "sqs:SendMessage",
        f"arn:aws:sqs:us-east-2:{ACCOUNT}:q", ALLOWED,
        context={"aws:sourcearn": (f"arn:aws:sns:us-east-2:{ACCOUNT}:topic-a",)}),
    Case("multi-valued keys: ForAllValues holds for an absent key", [doc(allow("dynamodb:GetItem", Condition={
        "ForAllValues:StringEquals": {"dynamodb:Attributes": ["ID", "Name"]}}))], "dynamodb:GetItem", TABLE04, ALLOWED),
    Case("multi-valued keys: ForAllValues fails when one value is outside the set", [doc(allow(
        "dynamodb:GetItem", Condition={"ForAllValues:StringEquals": {"dynamodb:Attributes": ["ID", "Name"]}}))],
        "dynamodb:GetItem", TABLE04, IMPLICIT, context={"dynamodb:attributes": ("ID", "Salary")}),
    Case("multi-valued keys: ForAnyValue fails for an absent key", [doc(allow("dynamodb:GetItem", Condition={
        "ForAnyValue:StringEquals": {"dynamodb:Attributes": ["ID"]}}))], "dynamodb:GetItem", TABLE04, IMPLICIT),
    Case("transaction-apis-iam example 3: a transactional Put is denied", [TRANSACTIONS_BLOCKED], "dynamodb:PutItem",
         TABLE04, EXPLICIT, context={"dynamodb:enclosingoperation": ("TransactWriteItems",)}),
    Case("transaction-apis-iam example 3: a plain PutItem is allowed", [TRANSACTIONS_BLOCKED], "dynamodb:PutItem",
         TABLE04, ALLOWED),
]


@pytest.mark.parametrize("case", CASES, ids=[c.source for c in CASES])
def test_documented_evaluation_case(case: Case) -> None:
    """The evaluator decides each documented request as AWS documents it."""
    identity = [Policy.parse(d, source=f"identity{n}") for n, d in enumerate(case.identity)]
    resource = [Policy.parse(d, source=f"resource{n}", resource_based=True)
                for n, d in enumerate(case.resource_policies)]
    decision = evaluate(case.action, case.resource, case.context, identity=identity, resource_policies=resource,
                        caller=CALLER)
    assert case.expected == decision.outcome


def test_an_explicit_deny_names_the_policy_type_that_denied() -> None:
    """Access denied messages say which kind of policy denied (troubleshoot_access-denied)."""
    decision = evaluate("s3:GetObject", "arn:aws:s3:::b/k", {"aws:securetransport": ("false",)},
                        identity=[Policy.parse(doc(allow("s3:*")), source="role")],
                        resource_policies=[Policy.parse(TLS_ONLY, source="BucketPolicy", resource_based=True)],
                        caller=CALLER)
    assert (EXPLICIT, PolicyType.RESOURCE, "BucketPolicy (DenyInsecure)") == (decision.outcome, decision.policy_type,
                                                                             decision.source)


@pytest.mark.parametrize(("document", "says"), [
    (doc(allow("s3:GetObject", Condition={"DateGreaterThan": {"aws:CurrentTime": "2026-01-01T00:00:00Z"}})),
     "DateGreaterThan is not supported"),
    (doc(allow("s3:GetObject", Condition={"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}})),
     "IpAddress is not supported"),
    (doc(allow("s3:GetObject", Condition={"StringSortOf": {"aws:SourceIp": "x"}})), "unknown condition operator"),
    (doc(allow("s3:GetObject", Condition={"ForEveryValue:StringEquals": {"k": "x"}})), "not ForAllValues"),
    (doc(allow("s3:GetObject", "arn:aws:s3:::b/${aws:username}/*")), "policy variables"),
    (doc(allow("s3:GetObject", "bucket/key")), "neither '*' nor an ARN"),
    (doc(allow("GetObject")), "'service:Action'"),
    (doc({"Effect": "Allow", "Action": "s3:*"}), "exactly one of Resource and NotResource"),
    (doc({"Effect": "Permit", "Action": "s3:*", "Resource": "*"}), "Effect must be Allow or Deny"),
    (doc(allow("s3:*", Principal="*")), "cannot name a Principal"),
    (doc(allow("s3:*", Resource={"Fn::GetAtt": ["Bucket", "Arn"]})), "did not resolve"),
])
def test_a_policy_the_evaluator_cannot_take_exactly_is_refused_at_load(document: dict[str, Any], says: str) -> None:
    """Never a silent allow: an unsupported operator or a malformed statement is an error naming it."""
    with pytest.raises(IamPolicyError, match="fn-lambda/Policy0") as caught:
        Policy.parse(document, source="fn-lambda/Policy0")
    assert says in str(caught.value)


def test_a_functions_session_principal_and_context_are_those_lambda_gives_it() -> None:
    """Lambda assumes the execution role with the function's name as session (lambda-intro-execution-role); the
    request context marks the request as made over TLS (the emulator stands in for it)."""
    permissions = FunctionPermissions(function="ApiFunction", role_name="stack-ApiFunctionRole", region="eu-west-1",
                                      account="000000000000", identity=())
    context = permissions.context()
    assert ("arn:aws:sts::000000000000:assumed-role/stack-ApiFunctionRole/ApiFunction",
            "arn:aws:iam::000000000000:role/stack-ApiFunctionRole") == (permissions.caller.session,
                                                                        permissions.caller.role)
    assert (("true",), ("eu-west-1",)) == (context["aws:securetransport"], context["aws:requestedregion"])


def test_permissions_survive_the_trip_to_the_worker() -> None:
    """The worker compiles the same documents again: the same decisions on both sides."""
    permissions = FunctionPermissions(
        function="F", role_name="R", region="us-east-1", account="000000000000",
        identity=(Policy.parse(doc(allow("s3:GetObject", "arn:aws:s3:::b/*")), source="R/P0"),),
        resource_policies={"arn:aws:s3:::b": (Policy.parse(TLS_ONLY | {"Statement": [
            TLS_ONLY["Statement"][0] | {"Condition": {"Bool": {"aws:SecureTransport": "true"}}}]},
            source="BucketPolicy", resource_based=True),)})
    again = FunctionPermissions.from_json(permissions.to_json())
    requests = [("s3:GetObject", "arn:aws:s3:::b/k"), ("s3:GetObject", "arn:aws:s3:::c/k"),
                ("s3:PutObject", "arn:aws:s3:::b/k")]
    expected = [EXPLICIT, IMPLICIT, EXPLICIT]  # the (inverted) bucket policy denies TLS requests to bucket b
    assert expected == [permissions.decide(*r).outcome for r in requests]
    assert expected == [again.decide(*r).outcome for r in requests]
