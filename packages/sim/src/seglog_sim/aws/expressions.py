"""DynamoDB condition, filter, key condition and projection expressions: parsed once per text, cached, evaluated
as closures over an item and the call's ExpressionAttributeValues.

Grammar and precedence follow the DynamoDB Developer Guide, "Comparison operator and function reference"
(Expressions.OperatorsAndFunctions): comparators ``= <> < <= > >=``, ``BETWEEN``, ``IN``, the functions
``attribute_exists attribute_not_exists attribute_type begins_with contains size``, then ``NOT``, ``AND``,
``OR`` (AND binds tighter than OR), parentheses first. Comparing values of different types, or an absent
attribute, is false (``<>`` is then true). Key conditions follow the Query API Reference
(KeyConditionExpression): ``hash = :v`` and optionally one sort key condition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_values import SCALAR_TYPES, Item, Value, compare, equal
from seglog_sim.aws.expression_tokens import Cursor
from seglog_sim.aws.update_expressions import compile_update

Values = dict[str, Value]
Operand = Callable[[Item, Values], Value | None]
Predicate = Callable[[Item, Values], bool]

#: which results of compare() (-1, 0, 1) make each ordering comparator true
_ORDERING: dict[str, frozenset[int]] = {"<": frozenset({-1}), "<=": frozenset({-1, 0}), ">": frozenset({1}),
                                        ">=": frozenset({0, 1})}
_COMPARATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
_BOOLEAN_FUNCTIONS = frozenset({"attribute_exists", "attribute_not_exists", "attribute_type", "begins_with",
                                "contains"})
_TYPE_NAMES = frozenset({"S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"})


@dataclass(frozen=True)
class Condition:
    """A compiled ConditionExpression or FilterExpression."""

    kind: str
    test: Predicate
    names_used: frozenset[str]
    values_used: tuple[str, ...]
    #: (:value, operator) pairs whose value must be a scalar (ordering comparators, BETWEEN, begins_with)
    scalar_values: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class KeyCondition:
    """A compiled KeyConditionExpression: one or two terms (attribute name, operator, :value placeholders), the
    operator one of ``= < <= > >= BETWEEN begins_with``."""

    terms: tuple[tuple[str, str, tuple[str, ...]], ...]
    names_used: frozenset[str]
    values_used: tuple[str, ...]


@dataclass(frozen=True)
class Projection:
    names: tuple[str, ...]
    names_used: frozenset[str]
    values_used: tuple[str, ...] = ()


class _ConditionParser:
    def __init__(self, cursor: Cursor) -> None:
        self.c = cursor
        self.scalar_values: list[tuple[str, str]] = []

    def parse(self) -> Predicate:
        test = self.or_expr()
        if not self.c.at_end():
            raise self.c.syntax_error()
        return test

    def or_expr(self) -> Predicate:
        left = self.and_expr()
        while self.c.accept("keyword", "OR"):
            right = self.and_expr()
            left = (lambda a, b: lambda item, values: a(item, values) or b(item, values))(left, right)
        return left

    def and_expr(self) -> Predicate:
        left = self.not_expr()
        while self.c.accept("keyword", "AND"):
            right = self.not_expr()
            left = (lambda a, b: lambda item, values: a(item, values) and b(item, values))(left, right)
        return left

    def not_expr(self) -> Predicate:
        if self.c.accept("keyword", "NOT"):
            inner = self.not_expr()
            return lambda item, values: not inner(item, values)
        return self.primary()

    def primary(self) -> Predicate:
        if self.c.accept("op", "("):
            inner = self.or_expr()
            self.c.expect("op", ")")
            return inner
        kind, text = self.c.peek()
        if kind == "name" and text in _BOOLEAN_FUNCTIONS and self.c.tokens[self.c.pos + 1] == ("op", "("):
            return self.function()
        left, left_ref = self.operand()
        kind, text = self.c.next()
        if kind == "op" and text in _COMPARATORS:
            right, right_ref = self.operand()
            return self.comparison(text, left, right, left_ref, right_ref)
        if (kind, text) == ("keyword", "BETWEEN"):
            low, low_ref = self.operand()
            self.c.expect("keyword", "AND")
            high, high_ref = self.operand()
            for ref in (left_ref, low_ref, high_ref):
                if ref:
                    self.scalar_values.append((ref, "BETWEEN"))
            return self.between(left, low, high, low_ref, high_ref)
        if (kind, text) == ("keyword", "IN"):
            self.c.expect("op", "(")
            options = [self.operand()[0]]
            while self.c.accept("op", ","):
                options.append(self.operand()[0])
            self.c.expect("op", ")")
            return lambda item, values: any(equal(left(item, values), o(item, values)) for o in options)
        self.c.pos -= 1
        raise self.c.syntax_error()

    def operand(self) -> tuple[Operand, str | None]:
        """An operand and, when it is a ``:value``, its placeholder."""
        kind, text = self.c.peek()
        if kind == "colon":
            ref = self.c.value_ref()
            return (lambda item, values: values[ref]), ref
        if kind == "name" and text == "size" and self.c.tokens[self.c.pos + 1] == ("op", "("):
            self.c.next()
            self.c.expect("op", "(")
            name = self.c.path()
            self.c.expect("op", ")")
            return (lambda item, values: _size(item.get(name))), None
        if kind == "name" and text in _BOOLEAN_FUNCTIONS:
            raise self.c.error(f"The function is not allowed to be used this way in an expression; function: {text}")
        name = self.c.path()
        return (lambda item, values: item.get(name)), None

    def comparison(self, op: str, left: Operand, right: Operand, left_ref: str | None,
                   right_ref: str | None) -> Predicate:
        if op == "=":
            return lambda item, values: equal(left(item, values), right(item, values))
        if op == "<>":
            return lambda item, values: not equal(left(item, values), right(item, values))
        for ref in (left_ref, right_ref):
            if ref:
                self.scalar_values.append((ref, op))
        holds = _ORDERING[op]

        def ordered(item: Item, values: Values) -> bool:
            return compare(left(item, values), right(item, values)) in holds
        return ordered

    def between(self, value: Operand, low: Operand, high: Operand, low_ref: str | None,
                high_ref: str | None) -> Predicate:
        def test(item: Item, values: Values) -> bool:
            lo, hi = low(item, values), high(item, values)
            if low_ref and high_ref and (c := compare(lo, hi)) is not None and c > 0:
                raise self.c.error("The BETWEEN operator requires upper bound to be greater than or equal to lower "
                                   f"bound; lower bound operand: {_show(lo)}, upper bound operand: {_show(hi)}")
            v = value(item, values)
            a, b = compare(v, lo), compare(v, hi)
            return a is not None and b is not None and a >= 0 and b <= 0
        return test

    def function(self) -> Predicate:
        name = self.c.next()[1]
        self.c.expect("op", "(")
        path = self.c.path()
        if name in ("attribute_exists", "attribute_not_exists"):
            self.c.expect("op", ")")
            if name == "attribute_exists":
                return lambda item, values: path in item
            return lambda item, values: path not in item
        self.c.expect("op", ",")
        arg, ref = self.operand()
        self.c.expect("op", ")")
        if name == "attribute_type":
            if ref is None:
                raise self.c.error("Incorrect operand type for operator or function; operator or function: "
                                   "attribute_type, operand type: path")
            return lambda item, values: _attribute_type(item.get(path), arg(item, values), self.c)
        if name == "begins_with":
            if ref:
                self.scalar_values.append((ref, "begins_with"))
            return lambda item, values: _begins_with(item.get(path), arg(item, values))
        return lambda item, values: _contains(item.get(path), arg(item, values))


def _size(value: Value | None) -> Value | None:
    if value is None:
        return None
    ((kind, data),) = value.items()
    if kind in ("N", "BOOL", "NULL"):
        return None
    return {"N": str(len(data.encode()) if kind == "S" else len(data))}


def _attribute_type(value: Value | None, wanted: Value | None, cursor: Cursor) -> bool:
    if wanted is None or "S" not in wanted or wanted["S"] not in _TYPE_NAMES:
        raise cursor.error(f"Invalid type: {_show(wanted)}")
    return value is not None and wanted["S"] in value


def _begins_with(value: Value | None, prefix: Value | None) -> bool:
    if value is None or prefix is None:
        return False
    ((kind, data),) = value.items()
    ((pkind, pdata),) = prefix.items()
    return kind == pkind and kind in ("S", "B") and bool(data.startswith(pdata))


def _contains(value: Value | None, operand: Value | None) -> bool:
    if value is None or operand is None:
        return False
    ((kind, data),) = value.items()
    ((okind, odata),) = operand.items()
    if kind in ("S", "B"):
        return kind == okind and odata in data
    if kind in ("SS", "NS", "BS"):
        return okind == kind[0] and any(equal({okind: m}, operand) for m in data)
    if kind == "L":
        return any(equal(v, operand) for v in data)
    return False


def _show(value: Value | None) -> str:
    if value is None:
        return "null"
    ((kind, data),) = value.items()
    return f"{{{kind}:{data}}}"


def check_scalars(kind: str, pairs: tuple[tuple[str, str], ...], values: Values) -> None:
    for ref, op in pairs:
        value = values[ref]
        ((vkind, _),) = value.items()
        allowed = ("S", "B") if op == "begins_with" else SCALAR_TYPES
        if vkind not in allowed:
            raise ValidationError(f"Invalid {kind}: Incorrect operand type for operator or function; operator or "
                                  f"function: {op}, operand type: {vkind}")


def compile_condition(text: str, names: dict[str, str], kind: str = "ConditionExpression") -> Condition:
    cursor = Cursor(text, kind, names)
    parser = _ConditionParser(cursor)
    test = parser.parse()
    return Condition(kind=kind, test=test, names_used=frozenset(cursor.names_used),
                     values_used=tuple(dict.fromkeys(cursor.values_used)), scalar_values=tuple(parser.scalar_values))


def compile_key_condition(text: str, names: dict[str, str]) -> KeyCondition:
    kind = "KeyConditionExpression"
    c = Cursor(text, kind, names)
    terms: list[tuple[str, str, tuple[str, ...]]] = []
    while True:
        depth = 0
        while c.accept("op", "("):
            depth += 1
        if c.peek() == ("name", "begins_with"):
            c.next()
            c.expect("op", "(")
            name = c.path()
            c.expect("op", ",")
            terms.append((name, "begins_with", (c.value_ref(),)))
            c.expect("op", ")")
        else:
            name = c.path()
            op_kind, op = c.next()
            if op_kind == "keyword" and op == "BETWEEN":
                low = c.value_ref()
                c.expect("keyword", "AND")
                terms.append((name, "BETWEEN", (low, c.value_ref())))
            elif op_kind == "op" and op in _COMPARATORS and op != "<>":
                terms.append((name, op, (c.value_ref(),)))
            elif (op_kind == "op" and op == "<>") or (op_kind == "keyword" and op in ("IN", "OR", "NOT")):
                raise c.error(f"Invalid operator used in KeyConditionExpression: {op}")
            else:
                c.pos -= 1
                raise c.syntax_error()
        for _ in range(depth):
            c.expect("op", ")")
        if c.accept("keyword", "AND"):
            continue
        if c.at_end():
            break
        token = c.peek()
        if token[0] == "keyword":
            raise c.error(f"Invalid operator used in KeyConditionExpression: {token[1]}")
        raise c.syntax_error()
    if len(terms) > 2:
        raise c.error("The expression has too many conditions; a key condition is the partition key and at most "
                      "one sort key condition")
    # Which term is the partition key is decided against the table's key schema by the caller.
    return KeyCondition(terms=tuple(terms), names_used=frozenset(c.names_used),
                        values_used=tuple(dict.fromkeys(c.values_used)))


def compile_projection(text: str, names: dict[str, str]) -> Projection:
    c = Cursor(text, "ProjectionExpression", names)
    paths = [c.path()]
    while c.accept("op", ","):
        paths.append(c.path())
    if not c.at_end():
        raise c.syntax_error()
    return Projection(names=tuple(dict.fromkeys(paths)), names_used=frozenset(c.names_used))


_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LIMIT = 4096


def cached(kind: str, text: str, names: dict[str, str] | None) -> Any:
    """The compiled expression of ``kind`` for ``text`` with these ExpressionAttributeNames, parsed once."""
    key = (kind, text, tuple(names.items()) if names else ())
    found = _CACHE.get(key)
    if found is not None:
        return found
    compiled: Any
    if kind == "KeyConditionExpression":
        compiled = compile_key_condition(text, names or {})
    elif kind == "ProjectionExpression":
        compiled = compile_projection(text, names or {})
    elif kind == "UpdateExpression":
        compiled = compile_update(text, names or {})
    else:
        compiled = compile_condition(text, names or {}, kind)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = compiled
    return compiled
