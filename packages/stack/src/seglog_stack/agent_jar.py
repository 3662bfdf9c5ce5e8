"""The no-op Java agent jar that stands in for LocalStack's ``ddb-local-loader`` agent.

LocalStack always starts DynamoDB Local with
``-javaagent:<var_libs>/dynamodb-local/2/ddb-local-loader-0.1.jar`` and downloads the real agent from GitHub
on first use, which fails on a machine without general internet access. The JVM only needs a jar whose
manifest names a ``Premain-Class`` with a ``premain`` method, so we write one ourselves.
The real agent patches DynamoDB Local for features seglog does not use.

The class bytes below were compiled once with ``javac --release 8 NoopAgent.java`` (class file version 52,
loadable by any JVM >= 8) from this source, so installing needs no ``javac``::

    public final class NoopAgent { public static void premain(String args) {} }
"""

from __future__ import annotations

import base64
import io
import os
import zipfile
from pathlib import Path

AGENT_CLASS_NAME = "NoopAgent"
MANIFEST = f"Manifest-Version: 1.0\nPremain-Class: {AGENT_CLASS_NAME}\n\n"

_NOOP_AGENT_CLASS_B64 = (
    "yv66vgAAADQADwoAAgADBwAEDAAFAAYBABBqYXZhL2xhbmcvT2JqZWN0AQAGPGluaXQ+AQADKClWBwAIAQAJTm9vcEFnZW50AQAE"
    "Q29kZQEAD0xpbmVOdW1iZXJUYWJsZQEAB3ByZW1haW4BABUoTGphdmEvbGFuZy9TdHJpbmc7KVYBAApTb3VyY2VGaWxlAQAOTm9v"
    "cEFnZW50LmphdmEAMQAHAAIAAAAAAAIAAQAFAAYAAQAJAAAAHQABAAEAAAAFKrcAAbEAAAABAAoAAAAGAAEAAAABAAkACwAMAAEA"
    "CQAAABkAAAABAAAAAbEAAAABAAoAAAAGAAEAAAABAAEADQAAAAIADg=="
)
NOOP_AGENT_CLASS = base64.b64decode(_NOOP_AGENT_CLASS_B64)


def agent_jar_bytes() -> bytes:
    """The jar as bytes: the manifest first (as ``jar`` writes it), then the class."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", MANIFEST)
        jar.writestr(f"{AGENT_CLASS_NAME}.class", NOOP_AGENT_CLASS)
    return buffer.getvalue()


def write_agent_jar(path: Path) -> None:
    """Write the agent jar to ``path`` atomically (no reader sees half a jar); a no-op if it is current."""
    data = agent_jar_bytes()
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
