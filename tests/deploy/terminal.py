"""A shell command run as a person runs it in a terminal window: ``bash -c TEXT`` with a pseudo-terminal as its
standard input, output and error (so ``isatty()`` is true and a command may ask), in a process group of its own
(the window's foreground job, which Ctrl-C interrupts as a whole)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

#: A fresh machine's shell keeps the machine's own settings (certificates, seglog's installs, its Python).
MACHINE_SETTINGS = frozenset({"AWS_CA_BUNDLE", "SEGLOG_HOME", "SEGLOG_PYTHON", "SEGLOG_UV"})


def fresh_shell_env() -> dict[str, str]:
    """This process's environment as a fresh machine's shell has it: no AWS configuration, credentials, region
    or endpoint, no seglog variable naming a stack or its ports; PATH, HOME and the machine's settings stay."""
    env = {k: v for k, v in os.environ.items() if k in MACHINE_SETTINGS or not k.startswith(("AWS_", "SEGLOG_"))}
    return {**env, "AWS_CONFIG_FILE": "/nonexistent/aws-config",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials"}

#: Colours and cursor movements a command writes to a terminal, and the carriage returns of its line endings.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Terminal:
    """``bash -c text`` in a window of its own: what it prints is read as it comes, and it can be answered."""

    def __init__(self, text: str, *, cwd: Path, env: Mapping[str, str]) -> None:
        self.text = text
        primary, secondary = os.openpty()
        try:
            self.process = subprocess.Popen(["bash", "-c", text], cwd=cwd, env=dict(env), stdin=secondary,
                                            stdout=secondary, stderr=secondary, start_new_session=True)
        except BaseException:
            os.close(primary)
            raise
        finally:
            os.close(secondary)
        self._primary = primary
        self._received = bytearray()
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name=f"terminal {text[:40]}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._primary, 65536)
            except OSError:  # EIO: every process that had the terminal open has closed it
                chunk = b""
            with self._changed:
                if not chunk:
                    self._changed.notify_all()
                    return
                self._received += chunk
                self._changed.notify_all()

    @property
    def output(self) -> str:
        """Everything printed so far, as text, without colours and carriage returns."""
        with self._changed:
            raw = bytes(self._received)
        return _CONTROL.sub("", raw.decode("utf-8", "replace"))

    def wait_for(self, text: str, timeout: float) -> bool:
        """Whether ``text`` is printed within ``timeout`` seconds (False as soon as the command has exited)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while text not in _CONTROL.sub("", self._received.decode("utf-8", "replace")):
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    return False
                self._changed.wait(min(left, 1.0))
        return True

    def type_line(self, line: str) -> None:
        """Type ``line`` and Enter (a carriage return, which the terminal hands the program as a newline)."""
        os.write(self._primary, f"{line}\r".encode())

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the window's foreground job, every process of it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)

    def wait(self, timeout: float) -> int | None:
        """The exit status once the command ends within ``timeout`` seconds, else None (it still runs)."""
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(5.0)  # what it printed last
        return status

    def close(self) -> None:
        """Kill what still runs of the command and close the window."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10.0)
        self._reader.join(5.0)
        os.close(self._primary)
