"""Regular expressions for the OpenAPI document, written in the subset ECMA-262 and Python agree on, so the
document's patterns say exactly what the API accepts (issue 23): numbers in a range, words in any case."""

from __future__ import annotations


def number_at_most(limit: int, *, minimum: int = 0) -> str:
    """A group matching the decimal numbers from ``minimum`` (0 or 1) to ``limit``, without leading zeros.

    >>> import re; [bool(re.fullmatch(number_at_most(204), str(n))) for n in (0, 9, 10, 199, 204, 205, 1000)]
    [True, True, True, True, True, False, False]
    """
    if minimum not in (0, 1) or limit < 1:
        raise ValueError("minimum is 0 or 1, and limit at least 1")
    top = str(limit)
    options = ["0"] if minimum == 0 else []
    for digits in range(1, len(top)):  # every number with fewer digits than the limit
        options.append("[1-9]" + (f"[0-9]{{{digits - 1}}}" if digits > 1 else ""))
    for i, digit in enumerate(top):  # as many digits: equal to the limit up to i, then a smaller digit
        low = 1 if i == 0 else 0
        if int(digit) > low:
            rest = len(top) - i - 1
            options.append(top[:i] + f"[{low}-{int(digit) - 1}]" + (f"[0-9]{{{rest}}}" if rest else ""))
    options.append(top)
    return "(?:" + "|".join(options) + ")"


def any_case(text: str) -> str:
    """``text`` with each ASCII letter matched in either case (ECMA-262 has no inline flag for it)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else "\\." if c == "." else c
                   for c in text)


def letters_at_most(letters: str) -> str:
    """A group matching the column letters from ``A`` to ``letters`` (``XFD``), in either case.

    >>> import re; [bool(re.fullmatch(letters_at_most("XFD"), t)) for t in ("a", "ZZ", "xfd", "XFE", "YAA", "AAAA")]
    [True, True, True, False, False, False]
    """
    top = letters.upper()
    options = [f"[A-Za-z]{{1,{len(top) - 1}}}"] if len(top) > 1 else []
    for i, letter in enumerate(top):  # as many letters: equal up to i, then an earlier letter
        if letter > "A":
            below = chr(ord(letter) - 1)
            rest = len(top) - i - 1
            tail = f"[A-Za-z]{{{rest}}}" if rest else ""
            options.append(any_case(top[:i]) + f"[A-{below}a-{below.lower()}]" + tail)
    options.append(any_case(top))
    return "(?:" + "|".join(options) + ")"
