"""FilterCriteria: which records an event source mapping hands to its function (DESIGN §9.5).

Lambda event filtering uses EventBridge's pattern language ("For filter rules, Lambda supports the same set of
syntax and rules as Amazon EventBridge", AWS Lambda Developer Guide, invocation-eventfiltering). A pattern is a
JSON object shaped like the record: object keys nest, a leaf is a list of rules, and

- every key of a pattern must match (AND); any rule of a leaf list may match (OR); a mapping's filters are ORed
  ("If a record from your event source satisfies one or more of your filters, Lambda includes the record");
- a key the pattern names must be present in the record, unless its rule is ``{"exists": false}``;
- where the record holds an array, the pattern matches if any element matches (EventBridge, eb-event-patterns,
  "Matching arrays"); a pattern object below an array must match within one element;
- ``exists`` looks at leaf values only: an object or an empty array is not a value (EventBridge
  eb-create-pattern-operators, "Exists matching only works on leaf nodes").

Rules, from the "Filter rule syntax" table of invocation-eventfiltering:

- Null, Empty: ``[null]``, ``[""]``
- Equals: ``["Alice"]``, ``[100]``, ``[true]``; Or: ``["Credit", "Debit"]``
- Equals (ignore case): ``[{"equals-ignore-case": "alice"}]``
- Not: ``[{"anything-but": "x"}]``, ``[{"anything-but": ["x", 1]}]``, ``[{"anything-but": {"prefix": "us-"}}]``
- Numeric: ``[{"numeric": ["=", 100]}]``, ``[{"numeric": [">", 10, "<=", 20]}]``
- Exists, Does not exist: ``[{"exists": true}]``, ``[{"exists": false}]``
- Begins with, Ends with: ``[{"prefix": "us-"}]``, ``[{"suffix": ".png"}]``

EventBridge operators the Lambda table does not list (``$or``, ``wildcard``, ``cidr``, ``prefix``/``suffix``
with ``equals-ignore-case``, ``anything-but`` with ``suffix``/``equals-ignore-case``/``wildcard``) are refused
with :class:`FilterPatternError`, so a pattern that works here does not fail at deploy. Alternatives across
fields are written as separate Filters, which Lambda ORs.

Matching follows the note under the Lambda table: "for strings, Lambda uses exact character-by-character matching
without case-folding or any other string normalization. For numbers, Lambda also uses string representation.
For example, 300, 300.0, and 3.0e2 are not considered equal." Here an int never equals a float (300 vs 300.0);
3.0e2 and 300.0 parse to the same float and cannot be told apart. ``numeric`` compares values that are JSON
numbers; a string such as a DynamoDB ``{"N": "42"}`` is not one.

SQS (invocation-eventfiltering, "Properly filtering Amazon SQS messages"): a pattern may treat ``body`` as JSON
(an object pattern) or as a plain string (a rule list). The record's body is parsed when it is a JSON object;
if the pattern's form and the body's form differ, Lambda drops the message. DynamoDB records carry their data
under ``dynamodb`` as JSON already and need nothing special.
"""

from __future__ import annotations

import json
import operator as op
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from seglog_awsmodel.errors import FilterPatternError as FilterPatternError  # importable from here too

#: A filter's Pattern is a string of at most 4096 characters (Lambda API Reference, Filter: "Pattern ... Maximum
#: length of 4096").
MAX_PATTERN_LENGTH: Final = 4096
#: Numbers in ``numeric`` rules lie within +-5.0e9 (EventBridge eb-create-pattern-operators, "Numeric matching").
NUMERIC_LIMIT: Final = 5.0e9

_COMPARISONS: Final = {"=": op.eq, "<": op.lt, "<=": op.le, ">": op.gt, ">=": op.ge}
_NUMERIC_OPERATORS: Final = tuple(_COMPARISONS)
# EventBridge operators that the Lambda filter rule table does not list.
_NOT_IN_LAMBDA: Final = frozenset({"wildcard", "cidr"})


class _Rule(Protocol):
    def test(self, value: Any) -> bool:
        """Whether one leaf value of the record satisfies this rule."""
        ...


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same_value(expected: Any, value: Any) -> bool:
    """Exact match as Lambda does it: same JSON type and same value (bool is not a number; 300 is not 300.0)."""
    return type(expected) is type(value) and expected == value


@dataclass(frozen=True)
class _Equals:
    value: str | int | float | bool | None

    def test(self, value: Any) -> bool:
        return _same_value(self.value, value)


@dataclass(frozen=True)
class _Prefix:
    prefix: str

    def test(self, value: Any) -> bool:
        return isinstance(value, str) and value.startswith(self.prefix)


@dataclass(frozen=True)
class _Suffix:
    suffix: str

    def test(self, value: Any) -> bool:
        return isinstance(value, str) and value.endswith(self.suffix)


@dataclass(frozen=True)
class _EqualsIgnoreCase:
    folded: str

    def test(self, value: Any) -> bool:
        return isinstance(value, str) and value.casefold() == self.folded


@dataclass(frozen=True)
class _AnythingBut:
    excluded: tuple[str | int | float, ...] = ()
    prefix: str | None = None

    def test(self, value: Any) -> bool:
        if self.prefix is not None:
            return not (isinstance(value, str) and value.startswith(self.prefix))
        return not any(_same_value(excluded, value) for excluded in self.excluded)


@dataclass(frozen=True)
class _Numeric:
    bounds: tuple[tuple[str, float], ...]

    def test(self, value: Any) -> bool:
        return _is_number(value) and all(_COMPARISONS[name](value, bound) for name, bound in self.bounds)


@dataclass(frozen=True)
class _Exists:
    exists: bool

    def test(self, value: Any) -> bool:
        # Only consulted through _Leaf, which decides presence itself.
        return self.exists


# ------------------------------------------------------------------------------------------------ nodes

_ABSENT: Final = object()


@dataclass(frozen=True)
class _Leaf:
    """A list of rules for one field: the field matches if any rule matches any of its leaf values."""

    rules: tuple[_Rule, ...]

    def matches(self, value: Any) -> bool:
        leaves = _leaf_values(value)
        for rule in self.rules:
            if isinstance(rule, _Exists):
                if rule.exists == bool(leaves):
                    return True
            elif any(rule.test(leaf) for leaf in leaves):
                return True
        return False


@dataclass(frozen=True)
class _Object:
    """A nested pattern object: every field must match."""

    fields: tuple[tuple[str, _Object | _Leaf], ...]

    def matches(self, value: Any) -> bool:
        if isinstance(value, list):
            # Fields below an array must match within one element.
            return any(self.matches(element) for element in value) if value else self.matches(_ABSENT)
        found: Mapping[str, Any] = value if isinstance(value, dict) else {}
        return all(node.matches(found.get(key, _ABSENT)) for key, node in self.fields)


def _leaf_values(value: Any) -> list[Any]:
    """The leaf values at a field: scalars, with arrays flattened; objects are not leaves."""
    if value is _ABSENT or isinstance(value, dict):
        return []
    if isinstance(value, list):
        return [leaf for element in value for leaf in _leaf_values(element)]
    return [value]


# ------------------------------------------------------------------------------------------------ compiling


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _compile_object(pattern: Mapping[str, Any], path: str) -> _Object:
    fields: list[tuple[str, _Object | _Leaf]] = []
    for key, node in pattern.items():
        here = _join(path, key)
        if key == "$or":
            raise FilterPatternError(
                here, "'$or' is an EventBridge operator that Lambda's filter rule table does not list; "
                "write each alternative as its own entry in Filters (Lambda ORs a mapping's filters)")
        if isinstance(node, dict):
            fields.append((key, _compile_object(node, here)))
        elif isinstance(node, list):
            if not node:
                raise FilterPatternError(here, "empty arrays are not allowed; list at least one rule")
            fields.append((key, _Leaf(tuple(_compile_rule(rule, f"{here}[{i}]") for i, rule in enumerate(node)))))
        else:
            raise FilterPatternError(
                here, f"must be an object or an array of rules, got {json.dumps(node)} "
                f"(write {json.dumps([node])} to match that value)")
    return _Object(tuple(fields))


def _compile_rule(rule: Any, path: str) -> _Rule:
    if rule is None or isinstance(rule, str | bool) or _is_number(rule):
        return _Equals(rule)
    if not isinstance(rule, dict):
        raise FilterPatternError(path, "a rule must be a string, number, true, false, null or a match object")
    if len(rule) != 1:
        raise FilterPatternError(path, f"a match object has exactly one key, got {sorted(rule)}")
    (operator, operand), = rule.items()
    here = f"{path}.{operator}"
    if operator == "prefix":
        return _Prefix(_string_operand(operand, here))
    if operator == "suffix":
        return _Suffix(_string_operand(operand, here))
    if operator == "equals-ignore-case":
        if not isinstance(operand, str):
            raise FilterPatternError(here, "equals-ignore-case takes a string")
        return _EqualsIgnoreCase(operand.casefold())
    if operator == "anything-but":
        return _compile_anything_but(operand, here)
    if operator == "numeric":
        return _Numeric(_numeric_bounds(operand, here))
    if operator == "exists":
        if not isinstance(operand, bool):
            raise FilterPatternError(here, "exists takes true or false")
        return _Exists(operand)
    if operator in _NOT_IN_LAMBDA:
        raise FilterPatternError(here, f"'{operator}' is an EventBridge operator that Lambda event filtering "
                                       "does not support")
    raise FilterPatternError(here, f"unrecognized match type {operator!r}; Lambda supports prefix, suffix, "
                                   "equals-ignore-case, anything-but, numeric and exists")


def _string_operand(operand: Any, path: str) -> str:
    if isinstance(operand, dict):
        raise FilterPatternError(path, f"{json.dumps(operand)}: a prefix or suffix with a nested match "
                                       "(equals-ignore-case) is EventBridge-only; Lambda takes a plain string")
    if not isinstance(operand, str):
        raise FilterPatternError(path, f"takes a string, got {json.dumps(operand)}")
    return operand


def _compile_anything_but(operand: Any, path: str) -> _AnythingBut:
    if isinstance(operand, dict):
        if list(operand) != ["prefix"]:
            raise FilterPatternError(path, f"anything-but takes a value, a list of values or {{\"prefix\": ...}}; "
                                           f"{sorted(operand)} is not supported by Lambda")
        prefix = operand["prefix"]
        if not isinstance(prefix, str) or not prefix:
            raise FilterPatternError(f"{path}.prefix", "anything-but prefix takes a non-empty string")
        return _AnythingBut(prefix=prefix)
    values = operand if isinstance(operand, list) else [operand]
    if not values:
        raise FilterPatternError(path, "anything-but needs at least one value")
    for i, value in enumerate(values):
        if not (isinstance(value, str) or _is_number(value)):
            where = f"{path}[{i}]" if isinstance(operand, list) else path
            raise FilterPatternError(where, f"anything-but excludes strings or numbers, not {json.dumps(value)}")
    return _AnythingBut(excluded=tuple(values))


def _numeric_bounds(operand: Any, path: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(operand, list) or not operand:
        raise FilterPatternError(path, 'numeric takes a list such as ["=", 100] or [">", 10, "<=", 20]')
    if len(operand) % 2:
        raise FilterPatternError(path, f"{json.dumps(operand)}: every operator needs a number after it")
    bounds: list[tuple[str, float]] = []
    for i in range(0, len(operand), 2):
        operator, number = operand[i], operand[i + 1]
        if operator not in _NUMERIC_OPERATORS:
            raise FilterPatternError(f"{path}[{i}]", f"unrecognized numeric operator {json.dumps(operator)}; "
                                                    f"use one of {', '.join(_NUMERIC_OPERATORS)}")
        if not _is_number(number):
            raise FilterPatternError(f"{path}[{i + 1}]", f"value of {operator} must be a number")
        if abs(number) > NUMERIC_LIMIT:
            raise FilterPatternError(f"{path}[{i + 1}]", f"{number} is outside +-{NUMERIC_LIMIT:.1e}")
        bounds.append((operator, float(number)))
    if len(bounds) > 2:
        raise FilterPatternError(path, "a numeric range has at most a lower and an upper bound")
    if len(bounds) == 2:
        (low_op, low), (high_op, high) = bounds
        if low_op not in (">", ">=") or high_op not in ("<", "<="):
            raise FilterPatternError(path, 'a numeric range is a lower bound (">" or ">=") then an upper bound '
                                           '("<" or "<=")')
        if high <= low:
            raise FilterPatternError(path, "the range's bottom must be less than its top")
    return tuple(bounds)


# ------------------------------------------------------------------------------------------------ public API


@dataclass(frozen=True)
class Matcher:
    """A compiled filter pattern. ``pattern`` is the parsed JSON, kept for logs and for reading back."""

    pattern: Mapping[str, Any]
    _root: _Object = field(repr=False, compare=False)

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` (one record of the event Lambda would send) satisfies this pattern."""
        view = _sqs_body_view(self._root, record)
        return view is not None and self._root.matches(view)


def compile_pattern(pattern: Mapping[str, Any] | str) -> Matcher:
    """Check and compile one filter pattern (a Filter's ``Pattern``: a JSON string, or already parsed).

    Raises:
        FilterPatternError: the pattern is not JSON, not an object, too long, or uses a rule Lambda refuses;
            the error names the offending part.
    """
    if isinstance(pattern, str):
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise FilterPatternError("", f"the pattern is {len(pattern)} characters; Lambda allows "
                                         f"{MAX_PATTERN_LENGTH}")
        try:
            parsed = json.loads(pattern)
        except json.JSONDecodeError as exc:
            raise FilterPatternError("", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
                from exc
    else:
        parsed = pattern
    if not isinstance(parsed, dict):
        raise FilterPatternError("", f"a pattern is a JSON object, got {json.dumps(parsed)[:80]}")
    return Matcher(pattern=parsed, _root=_compile_object(parsed, ""))


def compile_filter_criteria(criteria: Mapping[str, Any] | None) -> tuple[Matcher, ...]:
    """Compile a FilterCriteria property ``{"Filters": [{"Pattern": "..."}, ...]}`` (absent or empty: no filter).

    Raises:
        FilterPatternError: a filter is malformed; the path starts with ``Filters[i]``.
    """
    if not criteria:
        return ()
    filters = criteria.get("Filters", [])
    if not isinstance(filters, list):
        raise FilterPatternError("Filters", "must be a list of {Pattern: ...}")
    matchers: list[Matcher] = []
    for i, item in enumerate(filters):
        if not isinstance(item, Mapping) or "Pattern" not in item:
            raise FilterPatternError(f"Filters[{i}]", "each filter is {Pattern: '<json>'}")
        try:
            matchers.append(compile_pattern(item["Pattern"]))
        except FilterPatternError as exc:
            raise FilterPatternError(_join(f"Filters[{i}].Pattern", exc.path), exc.reason) from exc
    return tuple(matchers)


def matches(filters: Sequence[Matcher | Mapping[str, Any] | str], event_record: Mapping[str, Any]) -> bool:
    """Whether an event source mapping with these filters hands ``event_record`` to its function.

    A record passes if ANY filter matches; with no filters every record passes (a mapping without
    FilterCriteria does not filter). Patterns not yet compiled are compiled (and checked) here.
    """
    if not filters:
        return True
    return any(_as_matcher(f).matches(event_record) for f in filters)


def select(filters: Sequence[Matcher], records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of a batch that pass ``filters``, in order."""
    return [record for record in records if matches(filters, record)]


def _as_matcher(item: Matcher | Mapping[str, Any] | str) -> Matcher:
    return item if isinstance(item, Matcher) else compile_pattern(item)


def _sqs_body_view(root: _Object, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The record as the pattern sees it, or None when Lambda drops it for a body-format mismatch.

    An SQS record's ``body`` is a string. invocation-eventfiltering ("Properly filtering Amazon SQS messages"):
    a JSON body against a JSON (object) pattern, or a plain-string body against a plain-string pattern, is
    filtered; a mismatch is dropped; a pattern without ``body`` skips the check.
    """
    body = record.get("body")
    node = dict(root.fields).get("body")
    if node is None or not isinstance(body, str):
        return record
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    body_is_json = isinstance(parsed, dict)
    if isinstance(node, _Object):
        return {**record, "body": parsed} if body_is_json else None
    return None if body_is_json else record
