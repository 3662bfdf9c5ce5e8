"""The client ships alone: importing it loads no server code (a client program must not need boto3 or the core)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_client_loads_no_server_package() -> None:
    """If seglog_client imported seglog_core, seglog_aws or seglog_services (or boto3), every client install would
    drag in the server and its AWS SDK."""
    code = ("import sys, seglog_client; print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'seglog_core', 'seglog_aws', 'seglog_services', 'seglog_emulator', 'boto3', 'botocore'}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "[]" == loaded
