"""One fault plan shared by every process of an emulator run: its environment, its on/off switch, its log.

The supervisor hands its children (pollers, the gateway) and, through them, every worker process the same
two variables: ``SEGLOG_FAULT_PLAN`` (the plan as JSON, seed included) and ``SEGLOG_FAULT_DIR`` (a directory).
Each process builds its own :class:`FaultSchedule` from them — decisions are a pure function of (seed, kind,
site), so no process needs another's state — and appends every fault it injects, as one JSON line, to
``faults.jsonl`` in that directory (one ``write`` per line with O_APPEND, so lines from processes killed
with -9 are whole or absent). A file ``off`` in the directory switches every schedule off at once: a chaos
run stops its faults that way before it waits for quiescence.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule, InjectedFault

ENV_PLAN: Final = "SEGLOG_FAULT_PLAN"
ENV_DIR: Final = "SEGLOG_FAULT_DIR"
ENV_WRITES: Final = "SEGLOG_FAULT_WRITES"
LOG_FILE: Final = "faults.jsonl"
OFF_FILE: Final = "off"


@dataclass(frozen=True)
class FaultRuntime:
    """A plan and the directory its processes share; with ``record_writes``, the workers log each invocation's
    writes (:mod:`.writes`: how an app's differential verdict names who wrote a record that differs)."""

    plan: FaultPlan
    directory: Path
    record_writes: bool = False

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> FaultRuntime | None:
        """The runtime the supervisor set up for this process, or None when faults are not in play."""
        env = os.environ if environ is None else environ
        raw, directory = env.get(ENV_PLAN), env.get(ENV_DIR)
        if not raw or not directory:
            return None
        return cls(FaultPlan.from_mapping(json.loads(raw), source=ENV_PLAN), Path(directory),
                   record_writes=env.get(ENV_WRITES) == "1")

    def env(self) -> dict[str, str]:
        """The variables that hand this runtime to a child process."""
        return {ENV_PLAN: json.dumps(self.plan.to_mapping()), ENV_DIR: str(self.directory),
                **({ENV_WRITES: "1"} if self.record_writes else {})}

    # ---------------------------------------------------------------------------------------- switch

    @property
    def active(self) -> bool:
        return not (self.directory / OFF_FILE).exists()

    def stop(self) -> None:
        """Switch faults off in every process of the run (they check before each decision)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / OFF_FILE).touch()

    def start(self) -> None:
        """Switch faults (back) on."""
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / OFF_FILE).unlink(missing_ok=True)

    # ---------------------------------------------------------------------------------------- schedule

    def schedule(self, process: str, *, count_start: bool = False) -> FaultSchedule:
        """A schedule for one process, switched by :meth:`stop`/:meth:`start`, logging to the shared file.
        With ``count_start`` (a supervisor's child: one process per name at a time) this start is counted and
        the schedule's ``incarnation`` is the number of earlier starts of ``process`` in the run."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / LOG_FILE
        incarnation = self._count_start(process) if count_start else 0

        def sink(fault: InjectedFault) -> None:
            line = json.dumps({"kind": str(fault.kind), "key": fault.key, "params": fault.params, "at": fault.at,
                               "process": process, "pid": os.getpid()}) + "\n"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

        return FaultSchedule(self.plan, active=lambda: self.active, sink=sink, incarnation=incarnation)

    def _count_start(self, process: str) -> int:
        """Append one byte to ``starts.<process>`` and return how many were there before: the file outlives
        the process (and the supervisor), so a restarted poller draws new decisions."""
        fd = os.open(self.directory / f"starts.{process}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, b".")
            return os.fstat(fd).st_size - 1
        finally:
            os.close(fd)

    def occurrence(self, site: str) -> int:
        """How many times ``site`` has been asked about in the whole run, this time included (1 the first time), in
        any process: an identical AWS call retried by another worker process rolls again instead of meeting the
        decision its first try met (a retried API request on a fresh worker did, every time, while the workers
        were cold). One byte appended to ``sites/<site>`` per call (O_APPEND: whole, whatever the processes)."""
        folder = self.directory / "sites"
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / site.replace("/", "_"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, b".")
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def injected(self) -> list[dict[str, Any]]:
        """Every fault any process of the run recorded, in file order."""
        return read_injected(self.directory)

    def counts(self) -> dict[str, int]:
        """Faults injected by kind, every kind of the plan listed (zeros included)."""
        counted = Counter(f["kind"] for f in self.injected())
        return {str(kind): counted[str(kind)] for kind in FaultKind if kind in self.plan.specs or counted[kind]}


def read_injected(directory: Path) -> list[dict[str, Any]]:
    """The faults recorded in ``directory``'s log, in file order (none if there is no log). A line still being
    appended while this reads is left for the next read."""
    path = directory / LOG_FILE
    if not path.is_file():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def install_in_worker(process: str = "worker") -> FaultRuntime | None:
    """In a worker process: inject the plan's DynamoDB and S3 faults into every boto3 client the handler
    builds from now on. Does nothing when the supervisor set no plan."""
    from seglog_emulator.client_hooks import attach_to_every_client
    from seglog_emulator.faults.botocore_injector import BotocoreFaultInjector

    runtime = FaultRuntime.from_env()
    if runtime is None:
        return None
    injector = BotocoreFaultInjector(runtime.schedule(process), occurrence=runtime.occurrence)
    attach_to_every_client(injector.attach)
    return runtime
