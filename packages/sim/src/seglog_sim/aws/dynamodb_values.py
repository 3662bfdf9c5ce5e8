"""DynamoDB attribute values: validation, copies, ordering, equality and sizes.

Items are low-level attribute-value maps (``{"N": {"N": "3"}, "B": {"B": b"..."}}``), as boto3's client takes and
returns them. Values from callers are validated and copied on the way in (a caller mutating its dict changes
nothing stored) and copied on the way out. Stored items are never mutated in place: a write builds a new dict, so
older versions stay intact for eventually consistent reads and stream records.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from seglog_sim.aws.dynamodb_errors import ValidationError

Item = dict[str, dict[str, Any]]
Value = dict[str, Any]

SCALAR_TYPES = ("S", "N", "B")
_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"})
#: DynamoDB Developer Guide, "Service, account, and table quotas" (Constraints): an item is at most 400 KB.
MAX_ITEM_BYTES = 400 * 1024


def canonical_number(text: Any) -> str:
    """``text`` as DynamoDB stores a Number: leading and trailing zeroes trimmed ("01.50" -> "1.5").

    DynamoDB Developer Guide, "Supported data types" (Number): up to 38 significant digits, sent as strings.
    """
    if type(text) is str and text.isdigit() and (text[0] != "0" or text == "0"):
        return text  # the common case, already canonical
    try:
        number = Decimal(text) if isinstance(text, str) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise ValidationError("A value provided cannot be converted into a number")
    if len(number.normalize().as_tuple().digits) > 38:
        raise ValidationError("Attempting to store more than 38 significant digits in a Number")
    if number == 0:
        return "0"
    return format(number.normalize(), "f")


def normalize(value: Any) -> Value:
    """A validated copy of one attribute value from a caller (DynamoDB API Reference, AttributeValue)."""
    if type(value) is dict and len(value) == 1:  # the fast path: one scalar of the right Python type
        for kind, data in value.items():
            cls = type(data)
            if (kind == "S" and cls is str) or (kind == "B" and cls is bytes) or (kind == "BOOL" and cls is bool):
                return {kind: data}
            if kind == "N" and cls is str:
                return {"N": canonical_number(data)}
    return _normalize(value)


def _normalize(value: Any) -> Value:
    if not isinstance(value, dict) or len(value) != 1:
        raise ValidationError("Supplied AttributeValue has more than one datatypes set, must contain exactly one "
                              "of the supported datatypes" if isinstance(value, dict) and value else
                              "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
    ((kind, data),) = value.items()
    if kind == "S" and isinstance(data, str):
        return {"S": data}
    if kind == "N":
        return {"N": canonical_number(data)}
    if kind == "B" and isinstance(data, bytes | bytearray | memoryview):
        return {"B": bytes(data)}
    if kind == "BOOL" and isinstance(data, bool):
        return {"BOOL": data}
    if kind == "NULL" and data is True:
        return {"NULL": True}
    if kind in ("SS", "NS", "BS") and isinstance(data, list | tuple):
        if not data:
            label = {"SS": "string", "NS": "number", "BS": "binary"}[kind]
            raise ValidationError(f"One or more parameter values were invalid: An {label} set  may not be empty")
        members = [normalize({kind[0]: m})[kind[0]] for m in data]
        if len({sort_key({kind[0]: m}) for m in members}) != len(members):
            raise ValidationError(f"One or more parameter values were invalid: Input collection {members} contains "
                                  "duplicates.")
        return {kind: members}
    if kind == "L" and isinstance(data, list | tuple):
        return {"L": [normalize(v) for v in data]}
    if kind == "M" and isinstance(data, dict):
        return {"M": {str(k): normalize(v) for k, v in data.items()}}
    if kind not in _TYPES:
        raise ValidationError(f"Supplied AttributeValue has an unknown datatype {kind!r}")
    raise ValidationError(f"One or more parameter values were invalid: {kind} value {data!r} has the wrong form")


def normalize_item(item: Any, what: str = "Item") -> Item:
    if not isinstance(item, dict):
        raise ValidationError(f"One or more parameter values were invalid: {what} must be a map")
    return {name: normalize(value) for name, value in item.items()}


_SCALARS = frozenset({"S", "N", "B", "BOOL", "NULL"})


def copy_value(value: Value) -> Value:
    ((kind, data),) = value.items()
    if kind in _SCALARS:
        return {kind: data}
    if kind in ("SS", "NS", "BS"):
        return {kind: list(data)}
    if kind == "L":
        return {"L": [copy_value(v) for v in data]}
    if kind == "M":
        return {"M": {k: copy_value(v) for k, v in data.items()}}
    return {kind: data}


def copy_item(item: Item) -> Item:
    """A copy a caller may mutate freely (scalars are immutable; containers are copied)."""
    # Every read copies every attribute of every item it returns (the simulator's most frequent work): a scalar,
    # the common case, is copied here without a call to copy_value. A stored value has exactly one type.
    copied: Item = {}
    for name, value in item.items():
        for kind in value:
            copied[name] = value.copy() if kind in _SCALARS else copy_value(value)
    return copied


def sort_key(value: Value) -> Any:
    """A Python value that orders as DynamoDB orders scalars: numbers numerically, binary bytewise, strings by
    code point (UTF-8 byte order is code point order). DynamoDB Developer Guide, "Comparison operator and function
    reference"."""
    ((kind, data),) = value.items()
    if kind == "N":
        return Decimal(data)
    return data


def compare(left: Value | None, right: Value | None) -> int | None:
    """-1, 0 or 1 for two scalars of one type (S, N or B); None when they cannot be ordered (absent, different
    types, or not scalars), which makes every ordering comparison false."""
    if left is None or right is None:
        return None
    ((lk, lv),) = left.items()
    ((rk, rv),) = right.items()
    if lk != rk or lk not in SCALAR_TYPES:
        return None
    if lk == "N":
        if lv == rv:
            return 0
        lv, rv = Decimal(lv), Decimal(rv)
    return -1 if lv < rv else (1 if lv > rv else 0)


def equal(left: Value | None, right: Value | None) -> bool:
    """DynamoDB equality: same type and same value (numbers numerically, sets regardless of order)."""
    if left is None or right is None:
        return False
    ((lk, lv),) = left.items()
    ((rk, rv),) = right.items()
    if lk != rk:
        return False
    if lk == "N":
        return bool(lv == rv or Decimal(lv) == Decimal(rv))
    if lk in ("SS", "NS", "BS"):
        member = lk[0]
        return {sort_key({member: m}) for m in lv} == {sort_key({member: m}) for m in rv}
    if lk == "L":
        return len(lv) == len(rv) and all(equal(a, b) for a, b in zip(lv, rv, strict=True))
    if lk == "M":
        return lv.keys() == rv.keys() and all(equal(lv[k], rv[k]) for k in lv)
    return bool(lv == rv)


def items_equal(left: Item | None, right: Item | None) -> bool:
    if left is None or right is None:
        return left is right
    return left.keys() == right.keys() and all(equal(left[k], right[k]) for k in left)


# Sizes: DynamoDB Developer Guide, "Item sizes and formats" (CapacityUnitCalculations):
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
# the size of an item is the sum of its attribute names' UTF-8 lengths and its values' sizes: a string its UTF-8
# bytes, a binary its raw bytes, a number 1 byte per two significant digits plus 1, null and Boolean 1 byte, a list
# or map 3 bytes plus 1 byte and the size of each element (a map element's size includes its name).

def number_size(text: str) -> int:
    if text.isdigit():  # a canonical non-negative integer: no leading zeroes
        return (len(text.rstrip("0")) + 1) // 2 + 1
    digits = text.lstrip("-").replace(".", "").strip("0")
    return (len(digits) + 1) // 2 + 1


def value_size(value: Value) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "B":
        return len(data)
    if kind == "N":
        return number_size(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(m.encode()) for m in data)
    if kind == "BS":
        return sum(len(m) for m in data)
    if kind == "NS":
        return sum(number_size(m) for m in data)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in data)
    return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in data.items())


def item_size(item: Item | None) -> int:
    if not item:
        return 0
    total = 0
    for name, value in item.items():
        total += len(name) if name.isascii() else len(name.encode())
        for kind, data in value.items():  # scalars inline: this runs for every write and every item read
            if kind == "B":
                total += len(data)
            elif kind == "S":
                total += len(data) if data.isascii() else len(data.encode())
            elif kind == "N":
                total += number_size(data)
            else:
                total += value_size(value)
    return total


def checked_size(item: Item) -> int:
    """The item's size, refusing an item over 400 KB as DynamoDB does."""
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise ValidationError("Item size has exceeded the maximum allowed size")
    return size
