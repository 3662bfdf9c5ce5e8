"""The programs a build runs: uv (export, wheel builds, cross-platform installs) and a Python of the runtime's
version (wheel builds, bytecode). Found, not installed: the error says what to install.

uv's own guide ("Using uv with AWS Lambda") describes the recipe the builder follows: ``uv export`` the
runtime requirements, ``uv pip install --target`` them for Lambda's platform with ``--python-platform``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from seglog_deploy.errors import BuildError, ToolNotFoundError

log = structlog.get_logger("seglog.build")

#: Where ./dev tells a child process which uv it runs (set before `seglog` starts).
UV_ENV: Final = "SEGLOG_UV"
#: Where ./dev tells a child process which Python 3.13 the workspace uses.
PYTHON_ENV: Final = "SEGLOG_PYTHON"


def find_uv(environ: Mapping[str, str] | None = None) -> Path:
    """uv: ``$SEGLOG_UV`` (./dev exports it), then ``PATH``, then ``~/.local/bin/uv`` (pip install --user).

    Raises:
        ToolNotFoundError: none of them is an executable.
    """
    env = os.environ if environ is None else environ
    candidates = [env.get(UV_ENV) or "", shutil.which("uv", path=env.get("PATH")) or "",
                  str(Path.home() / ".local" / "bin" / "uv")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return Path(candidate)
    raise ToolNotFoundError("uv", "seglog build needs uv, and found none: run ./dev once (it installs uv), or "
                                  f"`pip install --user uv`, or point {UV_ENV} at a uv executable")


def find_python(version: str, environ: Mapping[str, str] | None = None) -> Path:
    """A Python of ``version`` ("3.13"): ``$SEGLOG_PYTHON``, the interpreter running this, or pythonX.Y on PATH.

    The bytecode shipped in an artifact must come from the runtime's minor version (its magic number).

    Raises:
        ToolNotFoundError: none of them is that version.
    """
    env = os.environ if environ is None else environ
    candidates = [env.get(PYTHON_ENV) or "", sys.executable,
                  shutil.which(f"python{version}", path=env.get("PATH")) or ""]
    for candidate in candidates:
        if candidate and _python_version(candidate) == version:
            return Path(candidate)
    raise ToolNotFoundError(f"python{version}", f"the runtime is python{version}, and no Python {version} was found: "
                                                f"install it (pyenv install {version}) or set {PYTHON_ENV}")


def _python_version(executable: str) -> str | None:
    if executable == sys.executable:
        return f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        out = subprocess.run([executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip()


@dataclass(frozen=True)
class Toolchain:
    """uv and the Python it builds with; every command runs from ``workspace`` (the uv workspace root)."""

    uv: Path
    python: Path
    workspace: Path
    #: Whether ``python`` is of the runtime's version (False: the nearest installed one stands in for it).
    exact: bool = True

    @classmethod
    def find(cls, workspace: Path, python_version: str, *, nearest: bool = False) -> Toolchain:
        """uv and a Python of ``python_version``; with ``nearest``, when there is none, the Python running this
        (``exact`` False) instead of ToolNotFoundError."""
        try:
            return cls(uv=find_uv(), python=find_python(python_version), workspace=workspace)
        except ToolNotFoundError as exc:
            if not nearest or exc.tool == "uv":
                raise
            return cls(uv=find_uv(), python=Path(sys.executable), workspace=workspace, exact=False)

    def uv_version(self) -> str:
        return self.run_uv(["--version"]).strip()

    def python_version(self) -> str:
        """The full version of the Python that compiles the bytecode (its output can differ between patches)."""
        return self.run([str(self.python), "-c", "import sys; print(sys.version)"]).strip()

    def run_uv(self, args: Sequence[str]) -> str:
        return self.run([str(self.uv), *args])

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> str:
        """Run ``argv`` from the workspace root; its standard output.

        Raises:
            BuildError: it failed; the message carries the command and its standard error.
        """
        environ = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", **(env or {})}
        log.debug("running", argv=list(argv))
        try:
            done = subprocess.run(list(argv), cwd=self.workspace, env=environ, capture_output=True, text=True,
                                  check=False)
        except OSError as exc:
            raise BuildError(f"could not run {argv[0]}: {exc}") from exc
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            raise BuildError(f"`{' '.join(argv)}` failed with exit status {done.returncode}:\n{tail}")
        return done.stdout
