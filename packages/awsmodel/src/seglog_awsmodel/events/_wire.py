"""JSON wire forms shared by the event builders."""

from __future__ import annotations

import base64


def to_base64(data: bytes | bytearray | memoryview | str) -> str:
    """``data`` as the base64 text AWS puts in JSON; a str is taken to be base64 already and kept."""
    if isinstance(data, str):
        return data
    return base64.b64encode(bytes(data)).decode("ascii")
