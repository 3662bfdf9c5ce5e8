"""The report of a chaos campaign: every run's findings, totals, and how to replay a failing seed."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS
from seglog_emulator.usage import Usage, add_usage
from seglog_plugin.chaos.coverage import target_args
from seglog_plugin.chaos.runner import RunReport
from seglog_plugin.chaos.watch import percentile
from seglog_report.model import Report, RunData


@dataclass
class CampaignReport:
    """Runs of one ``seglog chaos`` command."""

    seed: int
    faults: str
    runs: list[RunReport] = field(default_factory=list)
    seconds: float = 0.0
    title: str = "seglog chaos"
    #: The options that replay a run besides its seed (fault plan, rate, workload); ``--faults`` by default.
    replay_args: str = ""
    #: Crash points and fault kinds the runs' plans could reach and no run reached (:mod:`.coverage`).
    missed: list[str] = field(default_factory=list)
    #: What the report calls its runs ("chaos", "demo").
    kind: str = "chaos"
    #: Stopped by Ctrl-C (or SIGTERM): the runs are those finished, then the interrupted one, if any.
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    def run_data(self, run: RunReport) -> RunData:
        """``run`` as the report page draws it, titled and with its replay command and counters (a run whose files
        could not be read has no timeline)."""
        data = run.data or RunData(kind=self.kind, title=self.title, run=run.run, seed=run.seed,
                                   violations=list(run.violations))
        data.kind, data.seconds = self.kind, run.seconds
        data.title = f"{self.title} (interrupted)" if run.interrupted else self.title
        data.replay = "" if run.ok else self.replay(run)
        data.summary = run.to_dict()
        return data

    def replay(self, run: RunReport) -> str:
        """The command that runs ``run`` again, with what it armed for coverage."""
        return " ".join(filter(None, [f"seglog chaos --seed {run.seed} --runs 1 "
                                      f"{self.replay_args or f'--faults {self.faults}'}", target_args(run.targets)]))

    def totals(self) -> dict[str, Any]:
        faults: Counter[str] = Counter()
        crashes: Counter[str] = Counter()
        outcomes: Counter[str] = Counter()
        invocations: dict[str, Counter[str]] = {}
        usage: Usage = {}
        clients: Counter[str] = Counter()
        latency: list[float] = []
        dead_letters: Counter[str] = Counter()
        mixed: Counter[str] = Counter()
        for run in self.runs:
            faults.update(run.faults)
            crashes.update(run.crash_points_hit)
            outcomes.update(run.job_outcomes)
            for function, counts in run.invocations.items():
                invocations.setdefault(function, Counter()).update(counts)
            add_usage(usage, run.usage)
            clients.update({k: v for k, v in run.clients.items() if isinstance(v, int)})
            latency += run.snapshot_latency
            dead_letters.update({k: v for k, v in run.dead_letters.items() if k != "max_receive_count"})
            dead_letters["runs_with_dlq"] += bool(run.dead_letters.get("max_receive_count"))
            mixed.update(run.mixed_version)
        quiet = [r.quiescence_seconds for r in self.runs if r.quiescence_seconds is not None]
        minutes = self.seconds / 60 if self.seconds else 0.0
        return {
            "runs": len(self.runs), "failed_runs": sum(not r.ok for r in self.runs),
            "faults": dict(sorted(faults.items())),
            "crash_points_hit": {p: crashes[p] for p in (*WORKER_CRASH_POINTS, ROUTER_AFTER_SEND)},
            "crash_points_missed": [p for p in (*WORKER_CRASH_POINTS, ROUTER_AFTER_SEND) if not crashes[p]],
            "unreached": self.missed,
            "job_outcomes": dict(sorted(outcomes.items())),
            "duplicates_absorbed": outcomes["duplicate"] + outcomes["already_done"] + clients["deduplicated"],
            "retries": {"client_requests_retried": clients["retries"],
                        "invocations_failed": sum(n for c in invocations.values() for o, n in c.items()
                                                  if o != "success")},
            "deferrals": outcomes["deferred"], "takeovers": outcomes["taken_over"],
            "handoffs": outcomes["handed_off"],
            "dead_letters": {k: dead_letters[k] for k in ("runs_with_dlq", "arrivals", "redrives", "redriven",
                                                          "redriven_at_stop", "left")},
            "mixed_version": {k: mixed[k] for k in ("invocations", "build_jobs", "builds")},
            "snapshots": len(latency),
            "snapshot_latency_p50": percentile(latency, 50), "snapshot_latency_p99": percentile(latency, 99),
            "quiescence_p50": percentile(quiet, 50), "quiescence_max": max(quiet) if quiet else None,
            "invocations": {f: dict(c) for f, c in sorted(invocations.items())},
            "usage": usage, "clients": dict(clients),
            "supervisor_restarts": sum(r.supervisor_restarts for r in self.runs),
            "child_restarts": sum(r.child_restarts for r in self.runs),
            "seconds": round(self.seconds, 1),
            "scenarios_per_minute": round(len(self.runs) / minutes, 2) if minutes else None,
        }

    def to_report(self, command: str) -> Report:
        """The runs as the report page draws them (:meth:`run_data`)."""
        title = f"{self.title} (interrupted after {len(self.runs)} run(s))" if self.interrupted else self.title
        return Report(kind=self.kind, title=title, command=command, created_at=time.time(),
                      runs=[self.run_data(run) for run in self.runs], text=self.render())

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "faults": self.faults, "ok": self.ok, "interrupted": self.interrupted,
                "totals": self.totals(),
                "runs": [r.to_dict() for r in self.runs],
                "replay": [self.replay(r) for r in self.runs if not r.ok]}

    def render(self) -> str:
        """A plain-text report for people."""
        t = self.totals()
        verdict = "OK - 0 violations" if self.ok else f"FAILED - {t['failed_runs']} run(s) with violations"
        stopped = " (interrupted: the last run was never verified)" if self.interrupted else ""
        lines = [f"{self.title}: seed {self.seed}, {t['runs']} run(s), faults {self.faults}{stopped}",
                 f"result: {verdict}"]
        lines.append("")
        for run in self.runs:
            mark = "INT " if run.interrupted else "ok  " if run.ok else "FAIL"
            q = "-" if run.quiescence_seconds is None else f"{run.quiescence_seconds:.1f}s"
            lines.append(f"  {mark} run {run.run:>3} seed {run.seed:<8} {run.seconds:>6.1f}s  faults "
                         f"{sum(run.faults.values()):>3}  snapshots {run.snapshots:>3}  quiescent after {q}")
            if armed := target_args(run.targets):
                lines.append(f"         armed for coverage: {armed.removeprefix('--target ')}")
            for violation in run.violations[:10]:
                lines.append(f"         ! {violation}")
            if not run.ok:
                lines.append(f"         replay: {self.replay(run)}   (log: {run.log_file})")
        lines.append("")
        lines.append("faults injected by kind: " + ", ".join(f"{k} {v}" for k, v in t["faults"].items()))
        lines.append("crash points hit: " + ", ".join(f"{k} {v}" for k, v in t["crash_points_hit"].items()))
        lines.append("coverage: " + (f"not reached: {', '.join(self.missed)}" if self.missed else
                                     "every crash point and fault kind the plans could reach was reached"))
        lines.append(f"duplicates absorbed: {t['duplicates_absorbed']}  deferrals: {t['deferrals']}  "
                     f"takeovers: {t['takeovers']}  handoffs: {t['handoffs']}  "
                     f"client retries: {t['retries']['client_requests_retried']}  "
                     f"failed invocations: {t['retries']['invocations_failed']}")
        lines.append("snapshot jobs: " + ", ".join(f"{k} {v}" for k, v in t["job_outcomes"].items()))
        d, m = t["dead_letters"], t["mixed_version"]
        lines.append(f"dead-letter queue: {d['arrivals']} arrivals ({d['runs_with_dlq']} run(s) with maxReceiveCount "
                     f"lowered), {d['redriven']} redriven in {d['redrives']} redrives while running, "
                     f"{d['redriven_at_stop']} when faults stopped, {d['left']} left")
        lines.append(f"mixed versions: {m['invocations']} invocations with another chunk size, {m['build_jobs']} of "
                     f"them built, {m['builds']} snapshots built by two versions")
        p50, p99 = t["snapshot_latency_p50"], t["snapshot_latency_p99"]
        lines.append(f"snapshot latency (entry committed -> complete, {t['snapshots']} snapshots): "
                     f"p50 {_s(p50)}  p99 {_s(p99)}")
        lines.append(f"time to quiescence: p50 {_s(t['quiescence_p50'])}  max {_s(t['quiescence_max'])}")
        for function, counts in t["invocations"].items():
            lines.append(f"invocations {function}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        for service, row in sorted(t["usage"].items()):
            extra = f"  rcu {row.get('rcu', 0):.1f}  wcu {row.get('wcu', 0):.1f}" if service == "dynamodb" else ""
            lines.append(f"requests {service}: {int(row.get('requests', 0))}{extra}")
        lines.append(f"supervisor restarts: {t['supervisor_restarts']}  child restarts: {t['child_restarts']}  "
                     f"wall time {t['seconds']}s  scenarios/min {t['scenarios_per_minute']}")
        return "\n".join(lines)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"
