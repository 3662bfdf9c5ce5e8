"""What a running (or stopped) emulator is doing, read from its state directory only.

The supervisor writes ``emulator.json`` (its pid, the API's URL, each child's pid, the fault seed); each child
rewrites its status file four times a second (function, invocations in flight and so far); stream pollers keep
their checkpoints; a fault runtime appends to ``faults/faults.jsonl``. Reading those files answers "is it up,
is it busy, how far has it read" without talking to the emulator, so ``seglog emulate status`` works from any
shell, while the emulator runs, after it stopped, and after it was killed.

What only the application knows (seglog: the snapshots its worker cannot build with this code, on its pending
table) it adds as a section of its own (:class:`AppSection`, seglog's is :mod:`seglog_cli.blocked`): merged into
the JSON form and appended to the text.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Protocol

from seglog_emulator.alarm_watch import AlarmStatus, read_alarm_states
from seglog_emulator.child import read_statuses, status_file
from seglog_emulator.faults.runtime import read_injected
from seglog_emulator.supervisor import STATE_FILE
from seglog_stack.processes import pid_running

#: A child whose status file is older than this is not reporting (it rewrites it every 0.25 s).
STALE_SECONDS: Final = 5.0


@dataclass(frozen=True, kw_only=True)
class ChildStatus:
    name: str
    pid: int | None
    running: bool
    function: str | None = None
    in_flight: int = 0
    invocations: int = 0
    #: Seconds since the child last wrote its status (None: it never did).
    reported_ago: float | None = None


class AppSection(Protocol):
    """What an application adds to the status: keys of the JSON form and lines of the text form."""

    def to_dict(self) -> dict[str, Any]: ...

    def lines(self) -> list[str]: ...


@dataclass(frozen=True, kw_only=True)
class EmulatorStatus:
    state_dir: str
    #: "running"; "not running" (stopped cleanly, or never started here); "dead" (killed without its clean-up:
    #: its state file remains and names a process that is gone).
    state: str
    pid: int | None = None
    api_url: str | None = None
    seed: int | None = None
    children: list[ChildStatus] = field(default_factory=list)
    #: Stream mapping -> shard id -> last sequence number processed ("finished" marks a closed shard read out).
    checkpoints: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Faults injected so far, by kind (empty when no fault plan ran).
    faults: dict[str, int] = field(default_factory=dict)
    #: The application's own section, if it gave one.
    app: AppSection | None = None
    #: The template's alarms as the alarm watcher last evaluated them (empty: it never ran here).
    alarms: list[AlarmStatus] = field(default_factory=list)
    #: When they were evaluated (Unix time).
    alarms_at: float | None = None

    @property
    def in_alarm(self) -> list[AlarmStatus]:
        return [a for a in self.alarms if a.state == "ALARM"]

    @property
    def healthy(self) -> bool:
        """Running, and every child running and reporting."""
        return self.state == "running" and all(
            c.running and c.reported_ago is not None and c.reported_ago < STALE_SECONDS for c in self.children)

    def to_dict(self) -> dict[str, Any]:
        own = asdict(replace(self, app=None))
        del own["app"]
        return {**own, **(self.app.to_dict() if self.app else {}), "healthy": self.healthy,
                "in_alarm": [a.name for a in self.in_alarm]}

    def render(self) -> str:
        lines = [f"emulator: {self.state}" + (f" (pid {self.pid})" if self.pid else "") + f"  state {self.state_dir}"]
        if self.api_url:
            lines.append(f"API: {self.api_url}" + (f"  fault seed {self.seed}" if self.seed is not None else ""))
        for c in self.children:
            seen = "never reported" if c.reported_ago is None else f"reported {c.reported_ago:.1f}s ago"
            health = "running" if c.running else "DEAD"
            if c.running and (c.reported_ago is None or c.reported_ago >= STALE_SECONDS):
                health = "running, NOT REPORTING"
            lines.append(f"  {c.name:<42} pid {c.pid or '-':<7} {health:<22} in flight {c.in_flight:>2}  "
                         f"invocations {c.invocations:>6}  {seen}")
        for mapping, shards in self.checkpoints.items():
            finished = sum(1 for s in shards.values() if s == "finished")
            noun = "shard" if len(shards) == 1 else "shards"
            lines.append(f"  checkpoints {mapping}: {len(shards)} {noun} ({finished} read to their end)")
        if self.faults:
            shown = ", ".join(f"{k} {n}" for k, n in sorted(self.faults.items()))
            lines.append(f"  faults injected: {sum(self.faults.values())} ({shown})")
        if self.app is not None:
            lines += self.app.lines()
        lines += self._render_alarms()
        if self.state != "running":
            lines.append("  `seglog emulate` starts it; stream pollers resume from these checkpoints")
        return "\n".join(lines)

    def _render_alarms(self) -> list[str]:
        if not self.alarms:
            return []
        when = time.strftime("%H:%M:%S", time.localtime(self.alarms_at)) if self.alarms_at else "?"
        firing = self.in_alarm
        counts = Counter(a.state for a in self.alarms)
        shown = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        lines = [f"  alarms (as CloudWatch would evaluate them, at {when}): {shown}"]
        for a in firing:
            since = time.strftime("%H:%M:%S", time.localtime(a.since))
            lines.append(f"    ALARM {a.name} since {since}: {a.condition}")
            lines.append(f"      {a.reason}")
            lines.append(f"      {a.description}")
        return lines


def read_status(state_dir: Path, *, now: float | None = None, app: AppSection | None = None) -> EmulatorStatus:
    """The status of the emulator whose state directory is ``state_dir``, with the application's section."""
    found = _read_state_dir(state_dir, now=time.time() if now is None else now)
    alarms_at, alarms = read_alarm_states(state_dir)
    return replace(found, alarms=alarms, alarms_at=alarms_at, app=app)


def _read_state_dir(state_dir: Path, *, now: float) -> EmulatorStatus:
    state_path = state_dir / STATE_FILE
    try:
        state = json.loads(state_path.read_text())
    except FileNotFoundError:  # the supervisor removes it when it stops cleanly
        return EmulatorStatus(state_dir=str(state_dir), state="not running",
                              checkpoints=_checkpoints(state_dir / "checkpoints"), faults=_faults(state_dir / "faults"))
    except ValueError:  # being replaced right now: read once more
        time.sleep(0.05)
        state = json.loads(state_path.read_text())
    pid = state.get("pid")
    running = pid_running(pid)
    reports = {s.get("child"): s for s in read_statuses(state_dir)}
    children = []
    for name, child_pid in sorted((state.get("children") or {}).items()):
        report = reports.get(name) or {}
        if report.get("pid") != child_pid:  # the last report came from an earlier process of this child
            report = {}
        path = status_file(state_dir, name)
        ago = round(now - path.stat().st_mtime, 1) if report and path.is_file() else None
        children.append(ChildStatus(name=name, pid=child_pid, running=running and pid_running(child_pid),
                                    function=report.get("function"), in_flight=int(report.get("in_flight", 0)),
                                    invocations=int(report.get("invocations", 0)), reported_ago=ago))
    return EmulatorStatus(state_dir=str(state_dir), state="running" if running else "dead", pid=pid,
                          api_url=state.get("api_url"), seed=state.get("seed"), children=children,
                          checkpoints=_checkpoints(state_dir / "checkpoints"), faults=_faults(state_dir / "faults"))


def _checkpoints(directory: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            positions = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        finished = set(str(positions.pop("__finished__", "")).split(",")) - {""}
        found[path.stem] = {shard: ("finished" if shard in finished else seq) for shard, seq in positions.items()}
        found[path.stem].update({shard: "finished" for shard in finished if shard not in positions})
    return found


def _faults(directory: Path) -> dict[str, int]:
    return dict(Counter(str(f.get("kind")) for f in read_injected(directory)))
