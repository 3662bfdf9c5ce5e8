"""DynamoDB update expressions, compiled once per text: ``SET``, ``REMOVE``, ``ADD`` and ``DELETE`` clauses in any
order, each at most once.

DynamoDB Developer Guide, "Update expressions" (Expressions.UpdateExpressions): ``SET a = :v``, ``SET a = b + :n``
(numbers; ``-`` too), ``if_not_exists(path, value)``, ``list_append(a, b)``; ``REMOVE a, b``; ``ADD a :n`` adds
to a number or unions a set, creating the attribute when absent; ``DELETE a :s`` takes members out of a set. Every
right-hand side is evaluated against the item as it was before the update. Two actions on one path are refused
("Two document paths overlap"), as is a SET operand naming an attribute the item does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from decimal import Context, Decimal

from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_values import Item, Value, canonical_number, checked_size, sort_key
from seglog_sim.aws.expression_tokens import Cursor

Values = dict[str, Value]
SetValue = Callable[[Item, Values], Value]
_ARITHMETIC = Context(prec=38)  # DynamoDB numbers carry up to 38 significant digits
_KIND = "UpdateExpression"


def _invalid(message: str) -> ValidationError:
    return ValidationError(f"Invalid {_KIND}: {message}")


@dataclass(frozen=True)
class Update:
    """A compiled UpdateExpression."""

    sets: tuple[tuple[str, SetValue], ...]
    removes: tuple[str, ...]
    adds: tuple[tuple[str, str], ...]
    deletes: tuple[tuple[str, str], ...]
    #: every attribute the expression writes or removes, in order (key attributes may not be among them)
    paths: tuple[str, ...]
    names_used: frozenset[str]
    values_used: tuple[str, ...]

    def apply(self, old: Item, values: Values) -> Item:
        """The item after the update (a new dict; ``old`` is left as it was)."""
        computed = [(name, value(old, values)) for name, value in self.sets]
        new = dict(old)
        for name, result in computed:
            new[name] = result
        for name in self.removes:
            new.pop(name, None)
        for name, ref in self.adds:
            _add(new, name, values[ref])
        for name, ref in self.deletes:
            _delete(new, name, values[ref])
        return new


def _add(item: Item, name: str, operand: Value) -> None:
    ((kind, data),) = operand.items()
    if kind not in ("N", "SS", "NS", "BS"):
        raise _invalid(f"Incorrect operand type for operator or function; operator: ADD, operand type: {_TYPE[kind]}")
    current = item.get(name)
    if current is None:
        item[name] = {kind: list(data)} if kind != "N" else {"N": data}
        return
    if kind not in current:
        raise ValidationError("An operand in the update expression has an incorrect data type")
    if kind == "N":
        total = _ARITHMETIC.add(Decimal(current["N"]), Decimal(data))
        item[name] = {"N": canonical_number(str(total))}
        return
    member = kind[0]
    have = {sort_key({member: m}) for m in current[kind]}
    item[name] = {kind: list(current[kind]) + [m for m in data if sort_key({member: m}) not in have]}


def _delete(item: Item, name: str, operand: Value) -> None:
    ((kind, data),) = operand.items()
    if kind not in ("SS", "NS", "BS"):
        raise _invalid(f"Incorrect operand type for operator or function; operator: DELETE, operand type: "
                       f"{_TYPE[kind]}")
    current = item.get(name)
    if current is None:
        return
    if kind not in current:
        raise ValidationError("An operand in the update expression has an incorrect data type")
    member = kind[0]
    gone = {sort_key({member: m}) for m in data}
    kept = [m for m in current[kind] if sort_key({member: m}) not in gone]
    if kept:
        item[name] = {kind: kept}
    else:
        item.pop(name)  # a set cannot be empty: removing its last member removes the attribute


_TYPE = {"S": "STRING", "N": "NUMBER", "B": "BINARY", "BOOL": "BOOLEAN", "NULL": "NULL", "SS": "SET",
         "NS": "SET", "BS": "SET", "L": "LIST", "M": "MAP"}


def _existing(value: Value | None) -> Value:
    if value is None:
        raise ValidationError("The provided expression refers to an attribute that does not exist in the item")
    return value


class _UpdateParser:
    def __init__(self, cursor: Cursor) -> None:
        self.c = cursor

    def parse(self) -> Update:
        sets: list[tuple[str, SetValue]] = []
        removes: list[str] = []
        adds: list[tuple[str, str]] = []
        deletes: list[tuple[str, str]] = []
        seen: list[str] = []
        while not self.c.at_end():
            kind, clause = self.c.next()
            if kind != "keyword" or clause not in ("SET", "REMOVE", "ADD", "DELETE"):
                self.c.pos -= 1
                raise self.c.syntax_error()
            if clause in seen:
                raise _invalid(f"The \"{clause}\" section can only be used once in an update expression;")
            seen.append(clause)
            while True:
                if clause == "SET":
                    name = self.c.path()
                    self.c.expect("op", "=")
                    sets.append((name, self.set_value()))
                elif clause == "REMOVE":
                    removes.append(self.c.path())
                elif clause == "ADD":
                    adds.append((self.c.path(), self.c.value_ref()))
                else:
                    deletes.append((self.c.path(), self.c.value_ref()))
                if not self.c.accept("op", ","):
                    break
        paths = [n for n, _ in sets] + removes + [n for n, _ in adds] + [n for n, _ in deletes]
        for i, path in enumerate(paths):
            if path in paths[:i]:
                raise _invalid("Two document paths overlap with each other; must remove or rewrite one of these "
                               f"paths; path one: [{path}], path two: [{path}]")
        return Update(sets=tuple(sets), removes=tuple(removes), adds=tuple(adds), deletes=tuple(deletes),
                      paths=tuple(paths), names_used=frozenset(self.c.names_used),
                      values_used=tuple(dict.fromkeys(self.c.values_used)))

    def set_value(self) -> SetValue:
        left = self.operand()
        for sign in ("+", "-"):
            if self.c.accept("op", sign):
                right = self.operand()
                return _arithmetic(left, right, sign)
        return left

    def operand(self) -> SetValue:
        kind, text = self.c.peek()
        if kind == "colon":
            ref = self.c.value_ref()
            return lambda item, values: values[ref]
        if kind == "name" and text in ("if_not_exists", "list_append") and self.c.tokens[self.c.pos + 1] == (
                "op", "("):
            self.c.next()
            self.c.expect("op", "(")
            if text == "if_not_exists":
                name = self.c.path()
                self.c.expect("op", ",")
                default = self.operand()
                self.c.expect("op", ")")
                return lambda item, values: item.get(name) or default(item, values)
            first = self.operand()
            self.c.expect("op", ",")
            second = self.operand()
            self.c.expect("op", ")")
            return _list_append(first, second)
        if kind == "name" and self.c.tokens[self.c.pos + 1] == ("op", "("):
            raise _invalid(f"Invalid function name; function: {text}")
        name = self.c.path()
        return lambda item, values: _existing(item.get(name))


def _arithmetic(left: SetValue, right: SetValue, sign: str) -> SetValue:
    def compute(item: Item, values: Values) -> Value:
        a, b = _existing(left(item, values)), _existing(right(item, values))
        if "N" not in a or "N" not in b:
            raise ValidationError("An operand in the update expression has an incorrect data type")
        x, y = Decimal(a["N"]), Decimal(b["N"])
        result = _ARITHMETIC.add(x, y) if sign == "+" else _ARITHMETIC.subtract(x, y)
        return {"N": canonical_number(str(result))}
    return compute


def _list_append(first: SetValue, second: SetValue) -> SetValue:
    def compute(item: Item, values: Values) -> Value:
        a, b = _existing(first(item, values)), _existing(second(item, values))
        if "L" not in a or "L" not in b:
            raise ValidationError("An operand in the update expression has an incorrect data type")
        return {"L": list(a["L"]) + list(b["L"])}
    return compute


def compile_update(text: str, names: dict[str, str]) -> Update:
    return _UpdateParser(Cursor(text, _KIND, names)).parse()



def check_update_paths(key_names: Container[str], update: Update | None) -> None:
    """An update may not write a key attribute (UpdateItem API Reference, "UpdateExpression")."""
    for path in update.paths if update is not None else ():
        if path in key_names:
            raise ValidationError(f"One or more parameter values were invalid: Cannot update attribute {path}. "
                                  "This attribute is part of the key")


def updated(old: Item | None, key: Item, update: Update | None, values: Values) -> tuple[Item | None, int]:
    """The item after an UpdateItem, and its size: an absent item starts from its key. An update that only removes
    attributes from an absent item creates nothing."""
    if update is None:
        new = dict(old) if old is not None else dict(key)
    else:
        new = update.apply(old if old is not None else key, values)
        if old is None and not update.sets and not update.adds:
            return None, 0
    return new, checked_size(new)
