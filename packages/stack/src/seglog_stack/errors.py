"""Errors of the local stack manager, all under one root so the CLI can catch and print them.

Each message says what happened and what to do next; the data is also kept as attributes for callers.
"""

from __future__ import annotations

from pathlib import Path

from seglog_awsmodel.errors import ToolError


class StackError(ToolError):
    """Root of every local stack failure (install, start, health, stop)."""


class InstallError(StackError):
    """A step of the first-use install failed (uv, npm, apt-get, a missing tool)."""

    def __init__(self, message: str, *, step: str, output: str = "") -> None:
        detail = f"\n--- output of {step} ---\n{output.strip()[-4000:]}" if output.strip() else ""
        super().__init__(f"{message}{detail}")
        self.step = step
        self.output = output


class JavaNotFoundError(InstallError):
    """No Java runtime ≥ 17 on this machine, and none could be installed."""


class PortInUseError(StackError):
    """A port the stack needs is held by something that is not this run dir's healthy stack."""

    def __init__(self, *, port: int, service: str, env_var: str) -> None:
        super().__init__(
            f"port {port} (for {service}) is already in use by another program. Stop that program, or choose "
            f"another port: set {env_var}=<port> (or pass it to the stack manager / `seglog up`)."
        )
        self.port = port
        self.service = service
        self.env_var = env_var


class StackStartError(StackError):
    """A process of the stack exited or did not become healthy in time."""

    def __init__(self, message: str, *, process: str, log_path: Path, log_tail: str = "") -> None:
        tail = f"\n--- last lines of {log_path} ---\n{log_tail.rstrip()}" if log_tail.strip() else ""
        super().__init__(f"{message}; see its log: {log_path}{tail}")
        self.process = process
        self.log_path = log_path


class StackConflictError(StackError):
    """The run dir already holds a running stack with other settings (profile or ports)."""
