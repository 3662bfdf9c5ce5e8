"""SupervisorProcess: ``seglog emulate``'s supervisor run as a process of its own, which its starter can kill -9,
start again and stop — how chaos runs, the liveness test and the stall benchmark run the emulator.

Every way out waits for the process, so no handle is left to a process that still runs (a ``Popen`` finalised
while its process runs warns, and the test suite turns that warning into a failure: issue 34).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from seglog_emulator.child import ready_marker
from seglog_emulator.errors import EmulatorError
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.settings import ENV_VAR, LISTENER_ENV, EmulatorSettings, listener
from seglog_emulator.supervisor import STATE_FILE

#: How long a start may take before it is reported as failed (every child ready).
READY_SECONDS: Final = 60.0


class SupervisorProcess:
    """A supervisor run as its own process; its output is appended to ``log_path``."""

    def __init__(self, settings: EmulatorSettings, runtime: FaultRuntime | None, log_path: Path) -> None:
        #: The API's listening socket, made here and handed to every supervisor this starts: a client's connection
        #: waits in its backlog while the supervisor restarts (chaos's supervisor_restart) instead of being refused.
        self.listener = listener(settings.host, settings.port)
        self.settings = dataclasses.replace(settings, port=self.listener.getsockname()[1])
        self.runtime = runtime
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def __enter__(self) -> SupervisorProcess:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        return self.settings.api_url

    def start(self) -> None:
        """Start it and wait until every child is ready.

        Raises:
            EmulatorError: it exited while starting, or was not ready within :data:`READY_SECONDS` (then it is
                stopped).
        """
        state = self.settings.state_dir
        (state / STATE_FILE).unlink(missing_ok=True)
        shutil.rmtree(state / "ready", ignore_errors=True)
        env = {**os.environ, **self.settings.deployment.env(), ENV_VAR: self.settings.to_json(),
               LISTENER_ENV: str(self.listener.fileno())}
        if self.runtime is not None:
            env.update(self.runtime.env())
        with open(self.log_path, "ab") as out:
            # The supervisor stops when this process ends, however it ends (it watches its parent).
            self.proc = subprocess.Popen([sys.executable, "-m", "seglog_emulator.supervisor", "--watch-parent"],
                                         env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         start_new_session=True, pass_fds=(self.listener.fileno(),))
        try:
            self._wait_ready()
        except BaseException:
            self.kill()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        state = self.settings.state_dir
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EmulatorError(f"the supervisor exited with status {self.proc.returncode} while starting: "
                                    f"see {self.log_path}")
            path = state / STATE_FILE
            if path.is_file():
                children = json.loads(path.read_text())["children"]
                if children and all(ready_marker(state, name).is_file() for name in children):
                    return
            time.sleep(0.1)
        raise EmulatorError(f"the emulator was not ready after {READY_SECONDS:.0f} s: see {self.log_path}")

    def kill(self) -> None:
        """kill -9 the supervisor and wait for it; its children die with it (PR_SET_PDEATHSIG)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()

    def stop(self, grace: float = 30.0) -> int | None:
        """SIGTERM (the supervisor drains its children), then after ``grace`` seconds kill -9 its whole process
        group; returns its exit status (None if it never started)."""
        if self.proc is None:
            self.listener.close()
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        status = self.proc.wait()
        self.listener.close()
        return status
