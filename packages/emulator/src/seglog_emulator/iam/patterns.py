"""Wildcard matching the way IAM does it: actions, resource ARNs and string condition values.

* Actions (IAM User Guide, reference_policies_elements_action): ``service:Action`` with ``*`` (any characters)
  and ``?`` (one character), matched without regard to case ("Action values are case-insensitive").
* Resource ARNs (reference_policies_elements_resource, "Using wildcards in resource ARNs"): matched case-sensitively
  segment by segment, the segments being the parts between the first five colons. Within a segment ``*`` and
  ``?`` do not cross a colon, except that "if the * wildcard is the last character of a resource ARN segment, it
  can expand to match beyond the colon boundaries"; in the last segment (the resource part, which may hold
  colons and slashes) ``*`` matches anything. ``*`` alone matches every resource.
* ``StringLike`` values (reference_policies_elements_condition_operators): ``*`` and ``?`` anywhere, case-sensitive.

Patterns compile to regular expressions once, when a policy is loaded; matching is then one ``fullmatch``.
"""

from __future__ import annotations

import functools
import re
from typing import Final

#: An ARN has six parts: arn:partition:service:region:account-id:resource (reference-arns).
ARN_PARTS: Final = 6


class PatternError(ValueError):
    """A pattern IAM would refuse (the caller names the policy)."""


def _glob(pattern: str, *, any_char: str) -> str:
    out = []
    for char in pattern:
        if char == "*":
            out.append(f"{any_char}*")
        elif char == "?":
            out.append(any_char)
        else:
            out.append(re.escape(char))
    return "".join(out)


@functools.cache
def action_pattern(pattern: str) -> re.Pattern[str]:
    """``*`` or ``service:Action`` with wildcards, case-insensitive.

    Raises:
        PatternError: neither ``*`` nor ``service:...`` (IAM: "the action must have a service prefix").
    """
    if pattern == "*":
        return re.compile(".*", re.DOTALL)
    service, sep, name = pattern.partition(":")
    if not sep or not service or not name or "*" in service or "?" in service:
        raise PatternError(f"action {pattern!r} is not '*' or 'service:Action' (wildcards only after the colon)")
    return re.compile(f"{re.escape(service)}:{_glob(name, any_char='.')}", re.IGNORECASE | re.DOTALL)


@functools.cache
def arn_pattern(pattern: str) -> re.Pattern[str]:
    """A resource ARN pattern (or ``*``), case-sensitive, matched segment by segment.

    Raises:
        PatternError: not ``*`` and not an ARN of six parts.
    """
    if pattern == "*":
        return re.compile(".*", re.DOTALL)
    parts = pattern.split(":", ARN_PARTS - 1)
    if len(parts) != ARN_PARTS or parts[0] != "arn":
        raise PatternError(f"resource {pattern!r} is neither '*' nor an ARN (arn:partition:service:region:"
                           "account:resource)")
    segments = []
    for index, part in enumerate(parts):
        if index == ARN_PARTS - 1:
            segments.append(_glob(part, any_char="."))
            continue
        # A trailing * may run past the segment's colon; any other wildcard stays inside its segment.
        body, trailing = (part[:-1], True) if part.endswith("*") else (part, False)
        segments.append(_glob(body, any_char="[^:]") + (".*" if trailing else ""))
    return re.compile(":".join(segments), re.DOTALL)


@functools.cache
def like_pattern(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """A ``StringLike`` value: ``*`` and ``?`` match anything, case-sensitive unless ``ignore_case``."""
    return re.compile(_glob(pattern, any_char="."), re.DOTALL | (re.IGNORECASE if ignore_case else 0))
