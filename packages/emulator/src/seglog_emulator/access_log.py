"""An HTTP API's access log, as API Gateway writes it: one line per request, its ``Format`` with the
``$context`` variables filled in (Amazon API Gateway Developer Guide, http-api-logging and
http-api-logging-variables).

API Gateway writes the lines to the stage's CloudWatch log group; the emulator writes them as log events of the
gateway (``event: "access log"``), with the rendered line under ``line``. A variable the emulator does not know
renders as ``-``, as API Gateway renders a variable without a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import structlog

log = structlog.get_logger("seglog.gateway.access")

_VARIABLE: Final = re.compile(r"\$context\.([A-Za-z][A-Za-z0-9_.]*)")


class AccessLog:
    """Renders and writes one line per request from the API's AccessLogSettings.Format."""

    def __init__(self, format: str) -> None:
        self.format = format

    def render(self, context: Mapping[str, Any]) -> str:
        """``Format`` with each ``$context.name`` replaced by ``context[name]`` (``-`` when absent or None)."""
        def value(match: re.Match[str]) -> str:
            found = context.get(match.group(1))
            return "-" if found is None or found == "" else str(found)

        return _VARIABLE.sub(value, self.format)

    def write(self, context: Mapping[str, Any]) -> None:
        log.info("access log", line=self.render(context))
