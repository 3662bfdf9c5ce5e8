"""The tokenizer and token cursor that DynamoDB's expression parsers share (conditions, updates, key conditions,
projections).

DynamoDB Developer Guide, "Using expressions in DynamoDB" (Expressions) and "Expression attribute names": a name
in an expression is a letter or underscore followed by letters, digits and underscores; anything else, or a
reserved word, goes through a ``#name`` placeholder; values are always ``:value`` placeholders. The simulator
models top-level attribute names only: a nested document path (``a.b``, ``a[0]``) is refused with a
ValidationException that says so.
"""

from __future__ import annotations

import re
from typing import Any

from seglog_sim.aws.dynamodb_errors import ValidationError

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<hash>#[A-Za-z0-9_]+)|(?P<colon>:[A-Za-z0-9_]+)"
                    r"|(?P<op><>|<=|>=|[=<>(),+\-.\[\]])|(?P<num>[0-9]+))")
_SPACE = re.compile(r"\s*")
KEYWORDS = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE"})

Token = tuple[str, str]  # (kind, text): kind is name, keyword, hash, colon, op, num or eof


def tokenize(text: str, kind: str) -> list[Token]:
    tokens: list[Token] = []
    pos, end = 0, len(text)
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValidationError(f"Invalid {kind}: Syntax error; token: \"{text[pos]}\", near: "
                                  f"\"{text[max(0, pos - 8):pos + 8]}\"")
        group = match.lastgroup or ""
        token = match.group(group)
        if group == "name" and token.upper() in KEYWORDS:
            tokens.append(("keyword", token.upper()))
        else:
            tokens.append((group, token))
        pos = match.end()
    tokens.append(("eof", "<EOF>"))
    return tokens


class Cursor:
    """Walks a token list; resolves ``#name`` placeholders and records which placeholders were used."""

    def __init__(self, text: str, kind: str, names: dict[str, str]) -> None:
        if not text or not text.strip():
            raise ValidationError(f"Invalid {kind}: The expression can not be empty;")
        self.text, self.kind, self.names = text, kind, names
        self.tokens = tokenize(text, kind)
        self.pos = 0
        self.names_used: set[str] = set()
        self.values_used: list[str] = []

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        token = self.tokens[self.pos]
        if token[0] != "eof":
            self.pos += 1
        return token

    def accept(self, kind: str, text: str | None = None) -> bool:
        token = self.tokens[self.pos]
        if token[0] == kind and (text is None or token[1] == text):
            self.pos += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None) -> str:
        token = self.peek()
        if token[0] != kind or (text is not None and token[1] != text):
            raise self.syntax_error()
        self.pos += 1
        return token[1]

    def at_end(self) -> bool:
        return self.tokens[self.pos][0] == "eof"

    def syntax_error(self, token: Token | None = None) -> ValidationError:
        token = token or self.peek()
        near = " ".join(t[1] for t in self.tokens[max(0, self.pos - 1):self.pos + 2] if t[0] != "eof")
        return ValidationError(f"Invalid {self.kind}: Syntax error; token: \"{token[1]}\", near: \"{near}\"")

    def error(self, message: str) -> ValidationError:
        return ValidationError(f"Invalid {self.kind}: {message}")

    def path(self) -> str:
        """A top-level attribute name (a name token or a ``#name`` placeholder)."""
        kind, text = self.next()
        if kind == "hash":
            if text not in self.names:
                raise self.error(f"An expression attribute name used in the document path is not defined; "
                                 f"attribute name: {text}")
            self.names_used.add(text)
            name = self.names[text]
        elif kind == "name":
            name = text
        else:
            self.pos -= 1 if kind != "eof" else 0
            raise self.syntax_error((kind, text))
        if self.peek() in (("op", "."), ("op", "[")):
            raise self.error("the simulator models top-level attribute names only, not nested document paths "
                             f"(near {text!r}); extend seglog_sim.aws.expression_tokens to use them")
        return name

    def value_ref(self) -> str:
        ref = self.expect("colon")
        self.values_used.append(ref)
        return ref


def check_values(kind: str, refs: tuple[str, ...], values: dict[str, Any]) -> None:
    """Every ``:value`` an expression uses must be defined (DynamoDB checks before evaluating anything)."""
    for ref in refs:
        if ref not in values:
            raise ValidationError(f"Invalid {kind}: An expression attribute value used in expression is not "
                                  f"defined; attribute value: {ref}")
