"""Policy documents, parsed and compiled once: statements with Effect, Action/NotAction, Resource/NotResource,
Principal/NotPrincipal (resource-based policies) and Condition (IAM User Guide, reference_policies_elements).

A document IAM would refuse, or one using what the evaluator does not implement, raises
:class:`~seglog_emulator.errors.IamPolicyError` here, when the policy is loaded: a request is never allowed
because part of a policy was not understood.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from seglog_emulator.errors import IamPolicyError
from seglog_emulator.iam.conditions import Condition, ConditionError, Context, compile_conditions
from seglog_emulator.iam.patterns import PatternError, action_pattern, arn_pattern

#: Policy language versions (reference_policies_elements_version); a document without Version is 2008-10-17.
VERSIONS: Final = ("2012-10-17", "2008-10-17")
_STATEMENT_KEYS: Final = frozenset({"Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Principal",
                                    "NotPrincipal", "Condition"})
_ACCOUNT_ROOT = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):root$")


class Effect(StrEnum):
    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True)
class Caller:
    """Who makes a request, as resource-based policies' Principal elements name it (a role session here).

    Attributes:
        session: ``arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION``, the principal AWS reports.
        role: ``arn:aws:iam::ACCOUNT:role/ROLE``, which a Principal may name instead of the session.
        account: the 12-digit account id.
    """

    session: str
    role: str
    account: str


@dataclass(frozen=True)
class Principals:
    """A Principal (or NotPrincipal) element: ``*`` or ``{"AWS"|"Service"|...: value or [values]}``."""

    everyone: bool
    aws: frozenset[str]

    def names(self, caller: Caller, effect: Effect) -> bool:
        """Whether this element names ``caller``.

        An account principal (``123456789012`` or ``arn:aws:iam::123456789012:root``) names every principal of
        the account, but in an Allow it only delegates to the account's identity-based policies: "the
        resource-based policy alone cannot grant access" to an IAM identity of that account
        (reference_policies_elements_principal, "AWS account principals"). So it names the caller for a Deny and
        grants nothing by itself.
        """
        if self.everyone or "*" in self.aws or caller.session in self.aws or caller.role in self.aws:
            return True
        if effect is Effect.DENY:
            return any(_account_of(value) == caller.account for value in self.aws)
        return False


def _account_of(value: str) -> str | None:
    if value.isdigit() and len(value) == 12:
        return value
    found = _ACCOUNT_ROOT.match(value)
    return found.group(1) if found else None


@dataclass(frozen=True)
class Statement:
    sid: str | None
    effect: Effect
    actions: tuple[re.Pattern[str], ...]
    not_action: bool
    resources: tuple[re.Pattern[str], ...]
    not_resource: bool
    conditions: tuple[Condition, ...]
    principals: Principals | None = None
    not_principal: bool = False

    def applies(self, action: str, resource: str, context: Context, caller: Caller | None = None) -> bool:
        """Whether this statement covers the request (its Effect then decides)."""
        if any(p.fullmatch(action) for p in self.actions) == self.not_action:
            return False
        if any(p.fullmatch(resource) for p in self.resources) == self.not_resource:
            return False
        if self.principals is not None:
            if caller is None:
                return False
            if self.principals.names(caller, self.effect) == self.not_principal:
                return False
        return all(condition.holds(context) for condition in self.conditions)


@dataclass(frozen=True)
class Policy:
    """A compiled policy document; ``document`` is kept as given (it is what travels to the worker)."""

    source: str
    document: Mapping[str, Any]
    statements: tuple[Statement, ...]
    resource_based: bool = False

    @classmethod
    def parse(cls, document: Any, *, source: str, resource_based: bool = False) -> Policy:
        """Compile ``document``.

        Args:
            source: names the policy in errors and denials (e.g. ``ApiFunctionRole/ApiFunctionRolePolicy0``).
            resource_based: a bucket or queue policy, whose statements name a Principal.

        Raises:
            IamPolicyError: what IAM would refuse, or what the evaluator does not implement.
        """
        if not isinstance(document, Mapping):
            raise IamPolicyError(source, f"a policy document must be a JSON object, got {type(document).__name__}")
        version = document.get("Version", "2008-10-17")
        if version not in VERSIONS:
            raise IamPolicyError(source, f"Version {version!r} is not one of {', '.join(VERSIONS)}")
        raw = document.get("Statement")
        statements = raw if isinstance(raw, list) else [raw] if isinstance(raw, Mapping) else None
        if not statements:
            raise IamPolicyError(source, "the document has no Statement")
        compiled = tuple(_statement(s, source=f"{source} statement {n}", version=str(version),
                                    resource_based=resource_based) for n, s in enumerate(statements))
        return cls(source=source, document=document, statements=compiled, resource_based=resource_based)


def _statement(raw: Any, *, source: str, version: str, resource_based: bool) -> Statement:
    if not isinstance(raw, Mapping):
        raise IamPolicyError(source, "a statement must be a JSON object")
    unknown = sorted(set(raw) - _STATEMENT_KEYS)
    if unknown:
        raise IamPolicyError(source, f"unknown statement elements {unknown}")
    try:
        effect = Effect(str(raw.get("Effect")))
    except ValueError:
        raise IamPolicyError(source, f"Effect must be Allow or Deny, got {raw.get('Effect')!r}") from None
    action_key = _exactly_one(raw, "Action", "NotAction", source)
    resource_key = _exactly_one(raw, "Resource", "NotResource", source)
    principal_key = None
    if resource_based:
        principal_key = _exactly_one(raw, "Principal", "NotPrincipal", source)
    elif "Principal" in raw or "NotPrincipal" in raw:
        raise IamPolicyError(source, "an identity-based policy cannot name a Principal")
    resources = _strings(raw[resource_key], resource_key, source)
    if version == "2012-10-17" and any("${" in r for r in resources):
        raise IamPolicyError(source, f"policy variables in {resource_key} ({resources}) are not supported by the "
                                     "emulator's evaluator")
    try:
        actions = tuple(action_pattern(a) for a in _strings(raw[action_key], action_key, source))
        patterns = tuple(arn_pattern(r) for r in resources)
        conditions = compile_conditions(raw.get("Condition"))
    except (PatternError, ConditionError) as exc:
        raise IamPolicyError(source, str(exc)) from None
    if version == "2012-10-17" and any("${" in value for c in conditions for value in c.values):
        raise IamPolicyError(source, "policy variables in Condition values are not supported by the emulator's "
                                     "evaluator")
    principals = _principals(raw[principal_key], source) if principal_key else None
    return Statement(sid=raw.get("Sid"), effect=effect, actions=actions, not_action=action_key == "NotAction",
                     resources=patterns, not_resource=resource_key == "NotResource", conditions=conditions,
                     principals=principals, not_principal=principal_key == "NotPrincipal")


def _exactly_one(raw: Mapping[str, Any], key: str, not_key: str, source: str) -> str:
    if (key in raw) == (not_key in raw):
        raise IamPolicyError(source, f"a statement needs exactly one of {key} and {not_key}")
    return key if key in raw else not_key


def _strings(value: Any, element: str, source: str) -> list[str]:
    listed: Sequence[Any] = value if isinstance(value, list) else [value]
    if not listed or not all(isinstance(v, str) for v in listed):
        raise IamPolicyError(source, f"{element} must be a string or a list of strings, got {value!r} (an "
                                     "intrinsic function the emulator did not resolve?)")
    return list(listed)


def _principals(value: Any, source: str) -> Principals:
    if value == "*":
        return Principals(everyone=True, aws=frozenset())
    if not isinstance(value, Mapping):
        raise IamPolicyError(source, f"Principal must be '*' or an object such as {{\"AWS\": ...}}, got {value!r}")
    aws: set[str] = set()
    for kind, names in value.items():
        listed = _strings(names, f"Principal.{kind}", source)
        if kind == "AWS":
            aws.update(listed)
        elif kind not in ("Service", "Federated", "CanonicalUser"):
            raise IamPolicyError(source, f"unknown principal type {kind!r}")
    return Principals(everyone=False, aws=frozenset(aws))
