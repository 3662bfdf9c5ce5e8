"""The Condition element: operators, ``...IfExists``, ``Null``, and the set operators for multivalued keys.

Semantics (IAM User Guide, reference_policies_elements_condition and reference_policies_elements_condition_operators;
reference_policies_condition-single-vs-multi-valued-context-keys for the set operators):

* Several operators in one block, and several keys under one operator, must all hold (AND); several values for
  one key match if any does (OR). A negated operator (``StringNotEquals``, ``ArnNotLike``, ...) holds when the
  request's value matches none of them.
* "If the key that you specify in a policy condition is not present in the request context, the values do not
  match and the condition is false. If the policy condition requires that the key is not matched, such as
  StringNotLike or ArnNotLike, and the right key is not present, the condition is true." ``...IfExists`` makes
  a missing key true; ``Null`` tests presence itself (``"true"``: the key is absent).
* ``ForAllValues:`` holds when every value of the request matches (so when the key is absent or empty);
  ``ForAnyValue:`` when at least one does (never when the key is absent or empty).

Operators the emulator does not implement (Date*, IpAddress, NotIpAddress, BinaryEquals) raise
:class:`~seglog_emulator.errors.IamPolicyError` when the policy is loaded, never at a request and never as a
silent allow. Condition keys are matched without regard to case, as IAM does; request context keys are given
lowercase.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from seglog_emulator.iam.patterns import PatternError, arn_pattern, like_pattern

Comparator = Callable[[str, str], bool]
"""``(request value, policy value) -> whether they match``."""

Context = Mapping[str, tuple[str, ...]]
"""The request context: lowercase condition key -> its values (one for a single-valued key)."""


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numeric(compare: Callable[[float, float], bool]) -> Comparator:
    def match(value: str, wanted: str) -> bool:
        number = _number(value)
        return number is not None and compare(number, float(wanted))
    return match


def _arn(value: str, wanted: str) -> bool:
    try:
        return arn_pattern(wanted).fullmatch(value) is not None
    except PatternError:
        return False


#: Positive base operators: name -> comparator. Each has a negated twin in :data:`_NEGATED`.
_POSITIVE: Final[dict[str, Comparator]] = {
    "StringEquals": lambda value, wanted: value == wanted,
    "StringEqualsIgnoreCase": lambda value, wanted: value.lower() == wanted.lower(),
    "StringLike": lambda value, wanted: like_pattern(wanted).fullmatch(value) is not None,
    "NumericEquals": _numeric(lambda a, b: a == b),
    "NumericLessThan": _numeric(lambda a, b: a < b),
    "NumericLessThanEquals": _numeric(lambda a, b: a <= b),
    "NumericGreaterThan": _numeric(lambda a, b: a > b),
    "NumericGreaterThanEquals": _numeric(lambda a, b: a >= b),
    "Bool": lambda value, wanted: value.lower() == wanted.lower(),
    # ArnEquals and ArnLike behave alike: both match segment by segment with wildcards (condition operators page,
    # "Amazon Resource Name (ARN) condition operators").
    "ArnEquals": _arn,
    "ArnLike": _arn,
}
_NEGATED: Final = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "NumericNotEquals": "NumericEquals",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
}
#: Operators of the IAM grammar the emulator does not evaluate.
UNSUPPORTED: Final = frozenset({
    "DateEquals", "DateNotEquals", "DateLessThan", "DateLessThanEquals", "DateGreaterThan",
    "DateGreaterThanEquals", "IpAddress", "NotIpAddress", "BinaryEquals"})


class ConditionError(ValueError):
    """A condition block the emulator refuses (the caller names the policy)."""


@dataclass(frozen=True)
class Condition:
    """One (operator, key) pair of a Condition block, with its policy values."""

    operator: str
    key: str
    values: tuple[str, ...]
    compare: Comparator | None  # None: Null
    negated: bool = False
    if_exists: bool = False
    qualifier: str | None = None  # "ForAllValues" / "ForAnyValue"

    def holds(self, context: Context) -> bool:
        present = context.get(self.key)
        if self.compare is None:  # Null: "true" asks that the key be absent, "false" that it be present
            return any((value.lower() == "true") == (present is None) for value in self.values)
        if self.qualifier is not None:
            if not present:
                return self.if_exists or self.qualifier == "ForAllValues"
            each = (self._matches_any(value) != self.negated for value in present)
            return all(each) if self.qualifier == "ForAllValues" else any(each)
        if present is None:
            return self.if_exists or self.negated
        matched = any(self._matches_any(value) for value in present)
        return matched != self.negated

    def _matches_any(self, value: str) -> bool:
        assert self.compare is not None
        return any(self.compare(value, wanted) for wanted in self.values)


def compile_conditions(block: Any) -> tuple[Condition, ...]:
    """The conditions of a statement's Condition block (an empty block: none).

    Raises:
        ConditionError: an unknown or unsupported operator, or values the operator cannot take.
    """
    if block is None:
        return ()
    if not isinstance(block, Mapping):
        raise ConditionError(f"Condition must be an object of operators, got {block!r}")
    compiled = []
    for operator, keys in block.items():
        if not isinstance(keys, Mapping) or not keys:
            raise ConditionError(f"condition operator {operator} needs an object of condition keys, got {keys!r}")
        for key, raw in keys.items():
            compiled.append(_condition(str(operator), str(key), raw))
    return tuple(compiled)


def _condition(operator: str, key: str, raw: Any) -> Condition:
    qualifier, _, base = operator.rpartition(":")
    if qualifier and qualifier not in ("ForAllValues", "ForAnyValue"):
        raise ConditionError(f"condition operator {operator}: {qualifier!r} is not ForAllValues or ForAnyValue")
    if_exists = base.endswith("IfExists") and base != "IfExists"
    if if_exists:
        base = base.removesuffix("IfExists")
    listed = raw if isinstance(raw, list) else [raw]
    values = tuple(_text(value) for value in listed)
    if base in UNSUPPORTED:
        raise ConditionError(f"condition operator {operator} is not supported by the emulator's IAM evaluator "
                             "(it evaluates String*, Numeric*, Bool, Arn*, Null, ...IfExists, ForAllValues and "
                             "ForAnyValue)")
    if base == "Null":
        if if_exists or qualifier:
            raise ConditionError(f"condition operator {operator}: Null takes neither IfExists nor a set operator")
        if any(value.lower() not in ("true", "false") for value in values):
            raise ConditionError(f"Null condition on {key} must be 'true' or 'false', got {list(values)}")
        return Condition(operator=operator, key=key.lower(), values=values, compare=None)
    negated = base in _NEGATED
    positive = _NEGATED.get(base, base)
    compare = _POSITIVE.get(positive)
    if compare is None:
        raise ConditionError(f"unknown condition operator {operator} (IAM User Guide, "
                             "reference_policies_elements_condition_operators)")
    if positive.startswith("Numeric") and any(_number(value) is None for value in values):
        raise ConditionError(f"{operator} on {key} needs numbers, got {list(values)}")
    if positive == "Bool" and any(value.lower() not in ("true", "false") for value in values):
        raise ConditionError(f"Bool condition on {key} must be 'true' or 'false', got {list(values)}")
    return Condition(operator=operator, key=key.lower(), values=values, compare=compare, negated=negated,
                     if_exists=if_exists, qualifier=qualifier or None)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConditionError(f"condition value {value!r} is not a string, number or boolean")
