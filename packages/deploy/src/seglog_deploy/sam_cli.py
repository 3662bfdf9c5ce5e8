"""AWS SAM CLI in a virtualenv of its own, pinned by sam-requirements.txt, installed on first use under
``.seglog/tools/sam-cli`` in the workspace (SAM CLI pins a boto3, click and pydantic of its own, so it cannot
share the project's virtualenv).

Offline-safe once installed: a venv whose stamp holds the requirements file's hash is used as it is; a changed
file (a new pin) rebuilds it. A file lock keeps two processes from installing at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

import structlog

from seglog_deploy.errors import DeployError
from seglog_deploy.toolchain import Toolchain

log = structlog.get_logger("seglog.sam")

REQUIREMENTS_FILE: Final = "sam-requirements.txt"
STAMP: Final = ".seglog-stamp.json"
#: Where the venv goes, under the workspace root.
TOOLS_DIR: Final = Path(".seglog") / "tools"


class SamCliError(DeployError):
    """SAM CLI could not be installed, or a sam command failed; the message carries its output's end."""


def requirements_text() -> str:
    """The committed, pinned requirements of SAM CLI's venv."""
    return resources.files("seglog_deploy").joinpath(REQUIREMENTS_FILE).read_text(encoding="utf-8")


class SamCli:
    """``sam`` from its own venv in ``workspace``/.seglog/tools/sam-cli."""

    def __init__(self, toolchain: Toolchain) -> None:
        self.toolchain = toolchain
        self.venv = toolchain.workspace / TOOLS_DIR / "sam-cli"

    @property
    def executable(self) -> Path:
        return self.venv / "bin" / "sam"

    def ensure(self) -> Path:
        """Install SAM CLI unless the venv's stamp is current; the ``sam`` executable.

        Raises:
            SamCliError: the install failed (offline without an installed venv, for one).
        """
        wanted = {"requirements_sha256": hashlib.sha256(requirements_text().encode()).hexdigest()}
        self.venv.parent.mkdir(parents=True, exist_ok=True)
        with (self.venv.parent / "sam-cli.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._stamp() == wanted and self.executable.is_file():
                return self.executable
            log.info("installing SAM CLI", venv=str(self.venv))
            shutil.rmtree(self.venv, ignore_errors=True)
            requirements = self.venv.parent / REQUIREMENTS_FILE
            requirements.write_text(requirements_text(), encoding="utf-8")
            # --no-config: the workspace's uv settings (its constraint-dependencies) are the project's, not SAM's.
            try:
                self.toolchain.run_uv(["venv", "--quiet", "--no-config", "--python", str(self.toolchain.python),
                                       str(self.venv)])
                self.toolchain.run_uv(["pip", "install", "--quiet", "--no-config", "--python",
                                       str(self.venv / "bin" / "python"), "-r", str(requirements)])
            except DeployError as exc:
                raise SamCliError(f"could not install SAM CLI into {self.venv} (it needs the package index once): "
                                  f"{exc}") from exc
            (self.venv / STAMP).write_text(json.dumps(wanted))
            return self.executable

    def run(self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
            timeout: float = 1800) -> str:
        """Run ``sam ARGS`` (installing it first if needed); its combined output.

        Raises:
            SamCliError: it failed or timed out.
        """
        sam = self.ensure()
        environ = {**os.environ, "SAM_CLI_TELEMETRY": "0", **(env or {})}
        try:
            done = subprocess.run([str(sam), *args], cwd=cwd, env=environ, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SamCliError(f"`sam {' '.join(args)}` did not finish in {timeout:.0f} s") from exc
        output = done.stdout + done.stderr
        if done.returncode != 0:
            tail = "\n".join(output.strip().splitlines()[-20:])
            raise SamCliError(f"`sam {' '.join(args)}` failed with exit status {done.returncode}:\n{tail}")
        return output

    def _stamp(self) -> dict[str, str] | None:
        try:
            loaded: dict[str, str] = json.loads((self.venv / STAMP).read_text())
        except (OSError, ValueError):
            return None
        return loaded
