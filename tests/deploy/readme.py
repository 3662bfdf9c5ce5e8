"""The commands of README.md's "Pointing it at AWS" section, read from the README itself, so that a test runs the
text a person reads (issue 22, point 4) and a changed README is a changed test.

The section gives its commands in two forms:

- its one ```sh block (the deploy to AWS): a command a line, with a comment after ``#``; options the comment offers
  in brackets (``[--profile P]``) are options the command takes too;
- code spans of its prose that are commands: those starting with ``./dev`` or ``eval``. The spans from the
  paragraph "To try a deploy without AWS:" to the section's end are the same deploy on LocalStack, in the order a
  person runs them.

A code span may break across lines, which Markdown reads as a space (CommonMark, "Code spans").
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

SECTION = "Pointing it at AWS"
LOCAL_PARAGRAPH = "To try a deploy without AWS:"
#: What a prose code span starts with when it is a command to type.
COMMAND_STARTS = ("./dev ", "eval ")
DEV = "./dev"

_SECTION = re.compile(rf"^## {re.escape(SECTION)}\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: A code span: a run of backticks, then anything up to the same run (CommonMark, "Code spans").
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_BRACKETED = re.compile(r"\[(--[^\]]+)\]")
_SUBSTITUTION = re.compile(r"\$\((.*)\)", re.DOTALL)


@dataclass(frozen=True)
class Command:
    """One command as the README writes it: ``text`` is what is typed (bash ignores a trailing comment)."""

    text: str
    #: The words of the options the line's comment offers in brackets (the sh block's ``# [--profile P]``).
    optional: tuple[str, ...] = field(default=())

    def invocations(self) -> list[list[str]]:
        """The arguments of each ``./dev`` the text runs, in order, command substitutions included:
        ``eval "$(./dev env)"; ./dev smoke --api-url U`` runs ``[["env"], ["smoke", "--api-url", "U"]]``."""
        return _invocations(self.text)


@dataclass(frozen=True)
class Section:
    """The section's commands, each list in README order."""

    #: The ```sh block: the deploy to AWS.
    block: tuple[Command, ...]
    #: Command spans of the prose before "To try a deploy without AWS:".
    inline: tuple[Command, ...]
    #: Command spans from "To try a deploy without AWS:" to the section's end: the deploy on LocalStack.
    local: tuple[Command, ...]
    #: The question the README says deploy asks (the span ending in ``[y/N]``).
    prompt: str


def read_section(readme: Path) -> Section:
    """The "Pointing it at AWS" section of ``readme``.

    Raises:
        ValueError: the section, its sh block, its local paragraph or the deploy's question is not where this
            reader looks; the test would otherwise run nothing and pass.
    """
    found = _SECTION.search(readme.read_text(encoding="utf-8"))
    if found is None:
        raise ValueError(f"{readme}: no section '## {SECTION}'")
    body = found.group(1)
    blocks = [code for lang, code in _FENCE.findall(body) if lang == "sh"]
    if len(blocks) != 1:
        raise ValueError(f"{readme}: '## {SECTION}' has {len(blocks)} sh blocks, not one")
    prose = _FENCE.sub("", body)
    before, paragraph, after = prose.partition(LOCAL_PARAGRAPH)
    if not paragraph:
        raise ValueError(f"{readme}: '## {SECTION}' has no paragraph starting {LOCAL_PARAGRAPH!r}")
    prompts = [span for span in _spans(prose) if span.endswith("[y/N]")]
    if len(prompts) != 1:
        raise ValueError(f"{readme}: '## {SECTION}' names {len(prompts)} questions ending in [y/N], not one")
    return Section(block=tuple(_block_line(line) for line in blocks[0].splitlines() if line.strip()),
                   inline=_commands(before), local=_commands(after), prompt=prompts[0])


def _spans(markdown: str) -> list[str]:
    return [match.group(2).replace("\n", " ").strip() for match in _SPAN.finditer(markdown)]


def _commands(markdown: str) -> tuple[Command, ...]:
    return tuple(Command(span) for span in _spans(markdown) if span.startswith(COMMAND_STARTS))


def _block_line(line: str) -> Command:
    _, _, comment = line.partition(" #")
    optional = [word for group in _BRACKETED.findall(comment) for word in shlex.split(group)]
    return Command(line.strip(), optional=tuple(optional))


def _invocations(text: str) -> list[list[str]]:
    found: list[list[str]] = []
    for words in _simple_commands(text):
        if words[0] == DEV:
            found.append(words[1:])
            continue
        for word in words[1:]:  # eval "$(./dev env)": what the substitution runs
            for inner in _SUBSTITUTION.findall(word):
                found += _invocations(inner)
    return found


def _simple_commands(text: str) -> list[list[str]]:
    """The words of each simple command of a shell line (split at ``;``, ``&&``, ``||`` and ``|``)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set(";&|"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]
