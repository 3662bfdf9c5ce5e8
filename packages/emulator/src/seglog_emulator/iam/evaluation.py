"""AWS's policy evaluation logic for a request within one account, and a function's permissions.

The order (IAM User Guide, reference_policies_evaluation-logic_policy-eval-denyallow, and
reference_policies_evaluation-logic_policy-eval-basics for a role within a single account):

1. An explicit Deny in any applicable policy, identity-based or resource-based, denies: "An explicit deny in
   any of the policies overrides the allow."
2. Otherwise an Allow in an identity-based policy, or in a resource-based policy that names the caller, allows:
   "If either the identity-based policy or the resource-based policy within the same account allows the request
   and the other doesn't, the request is still allowed."
3. Otherwise the request is implicitly denied.

Organizations SCPs and RCPs, permissions boundaries and session policies play no part: a SAM template's function
roles have none (a template that sets PermissionsBoundary is refused by :mod:`seglog_emulator.iam.roles`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from seglog_emulator.iam.conditions import Context
from seglog_emulator.iam.policy import Caller, Effect, Policy

#: The account of every local resource (LocalStack's and DynamoDB Local's default).
LOCAL_ACCOUNT: Final = "000000000000"


class Outcome(StrEnum):
    ALLOWED = "allowed"
    EXPLICIT_DENY = "explicit_deny"
    IMPLICIT_DENY = "implicit_deny"


class PolicyType(StrEnum):
    """How AWS names a policy's type in an access denied message."""

    IDENTITY = "identity-based"
    RESOURCE = "resource-based"


@dataclass(frozen=True)
class Decision:
    """The outcome of one evaluation; ``policy_type`` and ``source`` say which policy decided a deny or allow."""

    outcome: Outcome
    policy_type: PolicyType | None = None
    source: str | None = None

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOWED


def evaluate(action: str, resource: str, context: Context, *, identity: Sequence[Policy],
             resource_policies: Sequence[Policy] = (), caller: Caller | None = None) -> Decision:
    """Decide one (action, resource) request.

    Args:
        action: ``service:Action`` as AWS authorizes it (e.g. ``dynamodb:PutItem``).
        resource: the resource's ARN.
        context: the request context (lowercase keys), e.g. ``{"aws:securetransport": ("true",)}``.
        identity: the caller's identity-based policies (the role's inline and managed policies).
        resource_policies: the resource's own policies (a bucket policy), matched against ``caller``.
    """
    for policies, kind in ((identity, PolicyType.IDENTITY), (resource_policies, PolicyType.RESOURCE)):
        for policy in policies:
            for statement in policy.statements:
                if statement.effect is Effect.DENY and statement.applies(action, resource, context, caller):
                    return Decision(Outcome.EXPLICIT_DENY, kind, _name(policy, statement.sid))
    for policies, kind in ((identity, PolicyType.IDENTITY), (resource_policies, PolicyType.RESOURCE)):
        for policy in policies:
            for statement in policy.statements:
                if statement.effect is Effect.ALLOW and statement.applies(action, resource, context, caller):
                    return Decision(Outcome.ALLOWED, kind, _name(policy, statement.sid))
    return Decision(Outcome.IMPLICIT_DENY)


def _name(policy: Policy, sid: str | None) -> str:
    return f"{policy.source} ({sid})" if sid else policy.source


@dataclass(frozen=True)
class FunctionPermissions:
    """What one function may do: its execution role's policies and the resource policies of the template.

    Attributes:
        function: the function's name (its FunctionName, else its logical id: the session name of its principal).
        role_name: the execution role's physical name.
        region, account: where the requests go.
        identity: the role's policies (inline, SAM policy templates, managed), compiled.
        resource_policies: bucket and queue policies by the ARN of the bucket or queue they protect.
    """

    function: str
    role_name: str
    region: str
    account: str
    identity: tuple[Policy, ...]
    resource_policies: Mapping[str, tuple[Policy, ...]] = field(default_factory=dict)

    @property
    def caller(self) -> Caller:
        role = f"arn:aws:iam::{self.account}:role/{self.role_name}"
        # Lambda assumes the execution role with the function's name as session name (Lambda Developer Guide,
        # lambda-intro-execution-role): the principal AWS names in a denial.
        session = f"arn:aws:sts::{self.account}:assumed-role/{self.role_name}/{self.function}"
        return Caller(session=session, role=role, account=self.account)

    def decide(self, action: str, resource: str, extra: Context | None = None) -> Decision:
        """Evaluate one request of this function (``extra``: service-specific context keys)."""
        return evaluate(action, resource, self.context(extra), identity=self.identity,
                        resource_policies=self.resource_policies_for(resource), caller=self.caller)

    def context(self, extra: Context | None = None) -> dict[str, tuple[str, ...]]:
        """The request context AWS would build for this function's requests (global condition keys,
        reference_policies_condition-keys), plus ``extra``.

        aws:SecureTransport is "true": on AWS the SDK reaches every service over HTTPS; locally the emulator
        stands in for TLS (the local endpoints are plain HTTP), so a TLS-only bucket policy (Deny when
        aws:SecureTransport is "false") does not apply, as it would not on AWS.
        """
        caller = self.caller
        context: dict[str, tuple[str, ...]] = {
            "aws:securetransport": ("true",),
            "aws:principalarn": (caller.role,),
            "aws:principalaccount": (self.account,),
            "aws:principaltype": ("AssumedRole",),
            "aws:requestedregion": (self.region,),
            "aws:epochtime": (str(int(time.time())),),
        }
        for key, values in (extra or {}).items():
            context[key.lower()] = values
        return context

    def resource_policies_for(self, resource: str) -> tuple[Policy, ...]:
        """The resource-based policies that protect ``resource``: a bucket's policy covers its objects too."""
        if resource.startswith("arn:aws:s3:::"):
            bucket = resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
            return tuple(self.resource_policies.get(f"arn:aws:s3:::{bucket}", ()))
        return tuple(self.resource_policies.get(resource, ()))

    # ------------------------------------------------------------------------------------------ transport

    def to_json(self) -> str:
        """The documents as given (compiled again on the other side), for the worker's environment."""
        return json.dumps({
            "function": self.function, "role_name": self.role_name, "region": self.region, "account": self.account,
            "identity": [{"source": p.source, "document": p.document} for p in self.identity],
            "resource_policies": {arn: [{"source": p.source, "document": p.document} for p in policies]
                                  for arn, policies in self.resource_policies.items()}})

    @classmethod
    def from_json(cls, text: str) -> FunctionPermissions:
        data: dict[str, Any] = json.loads(text)
        return cls(function=data["function"], role_name=data["role_name"], region=data["region"],
                   account=data["account"],
                   identity=tuple(Policy.parse(p["document"], source=p["source"]) for p in data["identity"]),
                   resource_policies={arn: tuple(Policy.parse(p["document"], source=p["source"], resource_based=True)
                                                 for p in policies)
                                      for arn, policies in data["resource_policies"].items()})
