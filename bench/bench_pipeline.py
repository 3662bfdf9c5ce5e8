"""The pipeline under the emulator: snapshot latency without faults (targets: p50 <= 1 s, p99 <= 3 s), the
stream record -> router hop (target: p50 <= 300 ms) and chaos scenarios per minute (target: >= 1).

Run: uv run --no-sync python -m bench.bench_pipeline [--profile dynamodb-local|localstack|both] [--quick]

The emulator (``python -m seglog_emulator.supervisor``: the HTTP gateway, the stream and queue pollers, each
function's handler in worker processes) runs on resources of its own on the bench stack, provisioned from
template.yaml with SnapshotEvery=10 and the template's other defaults, without faults; its log (JSON lines:
the supervisor's, its children's and the workers') goes to one file.

warm-up    two sheets get 10 edits each, so the API, the stream router and the snapshot worker start their
           worker processes. Those cold starts (Lambda's Init Duration: a process start and the handler's
           imports) and the latency of the snapshots they served are printed on their own, not mixed into the
           steady state; a cold start during the measurement (a second concurrent worker) is counted.
snapshot   then sheets are edited through the HTTP API, each by one client at a steady rate (the next edit is
 latency   due 1/rate after the previous one was due); the API appends a Snapshot entry after every 10th num.
           A SnapshotWatcher polls the log as a client would, every 0.1 s: latency = Snapshot entry seen ->
           snapshot root seen, each to within one poll (both ends are late alike, so the errors mostly cancel).
           Snapshot entries still incomplete DRAIN_SECONDS after the clients stop count as a miss.
router     per Snapshot entry (the records the router's FilterCriteria let through): the wall-clock time the
 hop       client got the answer to the append that made it (the API writes the Snapshot entry just before
           it answers) against the timestamp of the ``routed`` line the stream router logs for that
           (log_id, segment, entry); one machine, one clock (time.time() and structlog's ISO time stamps, both
           to the microsecond). The hop spans the poller's wait for its next GetRecords (4 a second: 0-250 ms),
           the read, the filter, the invocation of a warm worker and the router's SQS SendMessage (the line is
           logged after it). Bias: the answer comes after the write, by the API's reply through the gateway
           (a few ms), so the figure slightly under-states the hop, and a hop can even come out negative;
           the SendMessage inside it over-states it by that call's time.
chaos      a Campaign (fresh resources, CHAOS_PARAMETERS) runs seeded runs with every fault kind: each one
           starts the emulator, runs the clients, lets faults play out, waits for quiescence and verifies
           I1-I6. Scenarios per minute = runs / the campaign's wall time (provisioning excluded); the figure
           is MET only if every run verified ok too. Not with --quick: CI's chaos step measures it (see run).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.support import Headline, deployed, median, percentile
from seglog_aws.backend import Backend
from seglog_awsmodel.template import default_template_path
from seglog_client import START, Credentials, SeglogClient, edits, set_cell
from seglog_core.pipeline.order import ORDER_WAIT_SECONDS
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor_process import SupervisorProcess
from seglog_plugin.chaos import Campaign, RunReport, Workload
from seglog_plugin.chaos.watch import SnapshotWatcher
from seglog_plugin.resources import backend_of
from seglog_stack import local
from seglog_stack.local import LocalDeployment

SNAPSHOT_EVERY = 10
P50_TARGET, P99_TARGET = 1.0, 3.0
HOP_TARGET_MS = 300.0
CHAOS_TARGET = 1.0
CHAOS_SEED = 1
WARM_SHEETS = 2
#: Snapshot entries still incomplete this long after the clients stopped count as missed.
DRAIN_SECONDS = 30.0

#: (log_id, segment, num) -> wall-clock time the client got the append's answer.
Acks = dict[tuple[str, int, int], float]


@dataclass(frozen=True)
class Load:
    """The steady state: ``sheets`` sheets, each edited by one client at ``rate`` edits/s for ``seconds``."""

    sheets: int
    rate: float
    seconds: float


@dataclass
class Measured:
    """What the warm-up and the steady state saw from the client side."""

    ready_seconds: float = 0.0
    warm_latency: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    #: Seconds from each acknowledged append's send to its answer (the client's view, its retries included).
    answers: list[float] = field(default_factory=list)
    expected: int = 0  # Snapshot entries the steady state's appends made
    acks: Acks = field(default_factory=dict)
    appends: int = 0
    seconds: float = 0.0
    since: float = 0.0  # wall-clock start of the steady state
    load: float = 0.0  # the machine's 1-minute load average at its end (the stack shares the CPUs)
    failures: list[str] = field(default_factory=list)


def run(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    """All three measurements on the bench stack at ``deployment``; the emulator logs are removed at the end,
    unless a measurement raised or a chaos run failed (then their place is printed).

    Quick (CI's bench step, which shows the benchmark still runs): a 10 s steady state (about 10 snapshots, not 40
    s), and no chaos campaign: CI's own chaos step runs ten seeds with every fault kind right after and prints
    their scenarios per minute, so a one-run campaign here only repeated the first of them."""
    load = Load(sheets=2, rate=5.0, seconds=10.0 if quick else 40.0)
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-pipeline-"))
    keep = True
    try:
        headlines = steady_state(deployment, load, work)
        if quick:
            keep = False
            return [*headlines, skipped_chaos()]
        chaos_headlines, keep = chaos(deployment, quick, work / "chaos")
        return headlines + chaos_headlines
    finally:
        if keep:
            print(f"emulator logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ steady state


@contextmanager
def emulated(deployment: LocalDeployment, *, prefix: str, parameters: dict[str, Any], work: Path,
             log_path: Path, faults: FaultRuntime | None = None
             ) -> Iterator[tuple[LocalDeployment, SupervisorProcess, float]]:
    """The template provisioned on resources of its own (stack ``prefix``-xxxxxx) and the emulator running it
    (without faults unless given ``faults``), logging to ``log_path``: (the resources, the emulator's supervisor
    process — its ``settings`` say where the API is — and seconds until it was ready). Stopped and deleted at the
    end."""
    template = default_template_path()
    stack = f"{prefix}-{uuid.uuid4().hex[:6]}"
    pipe = local.provision(deployment.endpoints, profile=deployment.profile, region=deployment.region,
                           stack_name=stack, parameters=parameters, template=template)
    try:
        settings = EmulatorSettings(deployment=pipe, template=template, stack=stack, state_dir=work / "emulator",
                                    parameters=parameters)
        supervisor = SupervisorProcess(settings, faults, log_path)
        try:
            started = time.monotonic()
            supervisor.start()
            yield pipe, supervisor, time.monotonic() - started
        finally:
            supervisor.stop()
    finally:
        local.deprovision(deployment.endpoints, region=deployment.region, stack_name=stack, template=template)


def steady_state(deployment: LocalDeployment, load: Load, work: Path) -> list[Headline]:
    """Measurements 1 and 2: the emulator without faults on resources of its own, deleted at the end."""
    log_path = work / "emulator.log"
    print(f"\n## pipeline without faults ({load.sheets} sheets x {load.rate:g} edits/s for {load.seconds:.0f} s, "
          f"SnapshotEvery={SNAPSHOT_EVERY})", flush=True)
    measured = Measured()
    with emulated(deployment, prefix="bench-pipe", parameters={"SnapshotEvery": SNAPSHOT_EVERY}, work=work,
                  log_path=log_path) as (pipe, supervisor, ready):
        measured.ready_seconds = ready
        settings = supervisor.settings
        measure(backend_of(pipe), settings.api_url, settings.api_credentials[0], load, measured)
    return report(measured, read_log(log_path))


def measure(backend: Backend, url: str, credentials: Credentials, load: Load, measured: Measured) -> None:
    """Warm up, then edit at the steady rate while a SnapshotWatcher times every snapshot."""
    client = SeglogClient(url, credentials=credentials)  # signed, as the API requires
    warm = [client.create().log_id for _ in range(WARM_SHEETS)]
    watcher = SnapshotWatcher(backend, warm).start()
    try:
        edit_concurrently(url, credentials, warm, measured, rate=10.0, count=SNAPSHOT_EVERY)
        drain(watcher, expected=len(warm))
    finally:
        watcher.stop()
    measured.warm_latency = watcher.latencies()
    measured.acks.clear()

    sheets = [client.create().log_id for _ in range(load.sheets)]
    watcher = SnapshotWatcher(backend, sheets).start()
    try:
        measured.since = time.time()
        started = time.monotonic()
        edit_concurrently(url, credentials, sheets, measured, rate=load.rate, until=started + load.seconds)
        measured.seconds = time.monotonic() - started
        measured.load = os.getloadavg()[0]
        measured.appends = len(measured.acks)
        measured.expected = sum(1 for (_, _, num) in measured.acks if num % SNAPSHOT_EVERY == 0)
        drain(watcher, expected=measured.expected)
    finally:
        watcher.stop()
    measured.latency = watcher.latencies()


def edit_concurrently(url: str, credentials: Credentials, sheets: list[uuid.UUID], measured: Measured, *,
                      rate: float, count: int | None = None, until: float = float("inf"), batch: int = 1) -> None:
    """One client per sheet, each sending an entry every 1/rate s (``count`` entries, or until ``until``); with
    ``batch`` > 1 each entry is an edits entry of that many cell edits (issue 35). A sheet named more than once gets
    as many clients (bench_hot_http: many editors on one sheet)."""
    lock = threading.Lock()

    def client(log_id: uuid.UUID) -> None:
        api = SeglogClient(url, credentials=credentials)
        api.note_position(log_id, START)  # a sheet of this run: its next since is each answer's position
        due, n = time.monotonic(), 0
        while (count is None or n < count) and due < until:
            time.sleep(max(0.0, due - time.monotonic()))
            sent = time.monotonic()
            try:
                cells = [set_cell(f"{'ABCD'[k % 4]}{k % 20 + 1}", k) for k in range(n * batch, (n + 1) * batch)]
                answer = api.append(log_id, cells[0] if batch == 1 else edits(*cells))
            except Exception as exc:  # reported with the figures: a client that gave up is a finding
                with lock:
                    measured.failures.append(f"{log_id} edit {n}: {exc}")
                return
            answered = time.time()
            with lock:
                measured.acks[(str(log_id), answer.segment, answer.num)] = answered
                measured.answers.append(time.monotonic() - sent)
            n += 1
            due = max(due + 1 / rate, time.monotonic())  # a late edit does not make the next ones burst

    threads = [threading.Thread(target=client, args=(log_id,), daemon=True) for log_id in sheets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def drain(watcher: SnapshotWatcher, *, expected: int) -> None:
    """Until ``expected`` snapshots completed (and none is open), or DRAIN_SECONDS."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        watcher.poll()
        if len(watcher.latencies()) >= expected and not watcher.incomplete():
            return
        time.sleep(0.1)


# ------------------------------------------------------------------------------------------------ the log


def read_log(path: Path) -> list[dict[str, Any]]:
    """The emulator log's JSON lines (anything else in it, such as a traceback, is skipped)."""
    records: list[dict[str, Any]] = []
    if not path.is_file():
        return records
    with open(path, errors="replace") as lines:
        for line in lines:
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
    return records


def wall(record: dict[str, Any]) -> float:
    """A log line's ISO UTC time stamp as time.time() would have given it."""
    return datetime.fromisoformat(record["timestamp"]).timestamp()


def hops(records: list[dict[str, Any]], acks: Acks) -> tuple[list[float], list[float]]:
    """Per Snapshot entry: answer -> routed, and routed -> its snapshot job's end (seconds)."""
    routed: dict[tuple[str, int, int], float] = {}
    jobs: dict[tuple[str, int, int], float] = {}
    for record in records:
        event = record.get("event")
        if event not in ("routed", "snapshot job") or "log_id" not in record:
            continue
        key = (record["log_id"], int(record["segment"]), int(record["entry"]))
        if event == "routed":
            routed.setdefault(key, wall(record))
        elif record.get("outcome") == "completed":
            jobs.setdefault(key, wall(record))
    to_router = [at - acks[(lid, seg, num - 1)] for (lid, seg, num), at in routed.items()
                 if (num - 1) % SNAPSHOT_EVERY == 0 and (lid, seg, num - 1) in acks]
    to_job = [jobs[key] - at for key, at in routed.items()
              if key in jobs and (key[0], key[1], key[2] - 1) in acks]
    return sorted(to_router), sorted(to_job)


# ------------------------------------------------------------------------------------------------ figures


def report(measured: Measured, records: list[dict[str, Any]]) -> list[Headline]:
    invocations = [r for r in records if r.get("event") == "invocation"]
    cold = [r for r in invocations if r.get("cold_start")]
    warm_cold = [r for r in cold if wall(r) < measured.since]
    late_cold = Counter(r.get("function", "?") for r in cold if wall(r) >= measured.since)
    steady = [r for r in invocations if wall(r) >= measured.since]
    to_router, to_job = hops(records, measured.acks)
    latency = measured.latency
    missing = max(0, measured.expected - len(latency))

    print(f"emulator ready in {measured.ready_seconds:.1f} s; warm-up cold starts (Init Duration): "
          + (", ".join(f"{r.get('function')} {r.get('init_duration_ms', 0):.0f} ms" for r in warm_cold) or "none")
          + "; warm-up snapshots: " + (", ".join(f"{x:.2f} s" for x in measured.warm_latency) or "none"))
    print(f"steady state: {measured.appends} appends in {measured.seconds:.1f} s "
          f"({measured.appends / max(measured.seconds, 1e-9):.1f}/s), {measured.expected} Snapshot entries; "
          f"cold starts during it: {dict(late_cold) or 'none'}; load average at its end {measured.load:.1f} "
          f"on {os.cpu_count()} CPUs")
    for failure in measured.failures[:5]:
        print(f"  ! client gave up: {failure}")
    print(f"{'':<42}{'count':>7}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}")
    rows: list[tuple[str, list[float], float]] = [
        ("snapshot latency (s)", latency, 1.0),
        ("  answer -> routed (ms)", to_router, 1000.0),
        ("  routed -> job completed (ms)", to_job, 1000.0),
    ]
    for function in sorted({r.get("function", "?") for r in steady}):
        durations = [float(r.get("duration_ms", 0)) / 1000 for r in steady if r.get("function") == function]
        rows.append((f"  {function} invocation (ms)", durations, 1000.0))
    for name, values, scale in rows:
        cells = [percentile(values, q) * scale for q in (50, 90, 99)] + [max(values, default=float("nan")) * scale]
        print(f"{name:<42}{len(values):>7}" + "".join(f"{c:>9.3f}" if scale == 1.0 else f"{c:>9.1f}" for c in cells))
    for function in sorted({r.get("function", "?") for r in steady}):
        calls = [r.get("usage") or {} for r in steady if r.get("function") == function]
        services = sorted({service for usage in calls for service in usage})
        mean = {service: sum(u.get(service, {}).get("requests", 0) for u in calls) / len(calls) for service in services}
        print(f"  {function}: {sum(mean.values()):.1f} AWS requests per invocation ("
              + ", ".join(f"{service} {n:.1f}" for service, n in mean.items()) + ")")
    if missing:
        print(f"  ! {missing} snapshot(s) not complete {DRAIN_SECONDS:.0f} s after the clients stopped")
    idle = idling(steady, [r for r in records if wall(r) >= measured.since])
    print(f"  snapshot worker: {idle.billed_ms:,.0f} ms billed over {idle.invocations} invocations for "
          f"{idle.completed} completed snapshots ({idle.per_snapshot_ms:,.0f} ms per completed snapshot); "
          f"{len(idle.waits)} order waits, longest {max(idle.waits, default=0.0):.2f} s "
          f"({idle.waited_done} ended with the predecessors done; bound {ORDER_WAIT_SECONDS:g} s)")

    p50, p99 = percentile(latency, 50), percentile(latency, 99)
    hop50, hop99 = percentile(to_router, 50) * 1000, percentile(to_router, 99) * 1000
    first = max(measured.warm_latency, default=float("nan"))
    inits: dict[str, list[str]] = {}
    for record in warm_cold:
        inits.setdefault(record.get("function", "?"), []).append(f"{float(record.get('init_duration_ms', 0)):.0f}")
    return [
        Headline(name="snapshot latency, no faults",
                 figure=f"p50 {p50:.2f} s, p99 {p99:.2f} s, max {max(latency, default=float('nan')):.2f} s "
                        f"({len(latency)} snapshots" + (f", {missing} not complete" if missing else "") + ")",
                 target=f"p50 <= {P50_TARGET:g} s, p99 <= {P99_TARGET:g} s",
                 met=bool(latency) and not missing and p50 <= P50_TARGET and p99 <= P99_TARGET),
        Headline(name="emulator cold start",
                 figure=f"warm-up snapshot {first:.2f} s; Init " + (", ".join(f"{f} {'/'.join(ms)} ms" for f, ms in
                                                                             sorted(inits.items())) or "none seen")
                        + (f"; {sum(late_cold.values())} more during the steady state" if late_cold else ""),
                 target="context, not in the latency above", met=None),
        Headline(name="snapshot worker billed per completed snapshot, no faults",
                 figure=f"{idle.per_snapshot_ms:,.0f} ms ({idle.invocations} invocations, {idle.completed} "
                        f"completed); longest order wait {max(idle.waits, default=0.0):.2f} s",
                 target=f"no order wait over {ORDER_WAIT_SECONDS:g} s",
                 met=idle.completed > 0 and max(idle.waits, default=0.0) <= ORDER_WAIT_SECONDS),
        Headline(name="stream record -> router hop",
                 figure=f"p50 {hop50:.0f} ms, p99 {hop99:.0f} ms ({len(to_router)} records; routed -> snapshot "
                        f"complete p50 {median(to_job) * 1000:.0f} ms)",
                 target=f"p50 <= {HOP_TARGET_MS:.0f} ms", met=bool(to_router) and hop50 <= HOP_TARGET_MS),
    ]


@dataclass
class Idling:
    """What the snapshot worker was billed for in the steady state, and the order waits inside it."""

    invocations: int
    billed_ms: float
    completed: int
    waits: list[float]
    waited_done: int

    @property
    def per_snapshot_ms(self) -> float:
        return self.billed_ms / self.completed if self.completed else float("nan")


def idling(invocations: list[dict[str, Any]], records: list[dict[str, Any]]) -> Idling:
    """The worker's billed time (Lambda bills each invocation's duration rounded up to the ms) per completed
    snapshot, and every order wait the worker logged (seglog_core.pipeline.worker: "order wait")."""
    worker = [r for r in invocations if "SnapshotWorker" in str(r.get("function", ""))]
    waits = [r for r in records if r.get("event") == "order wait"]
    return Idling(invocations=len(worker), billed_ms=sum(math.ceil(float(r.get("duration_ms", 0))) for r in worker),
                  completed=sum(1 for r in records if r.get("event") == "snapshot job"
                                and r.get("outcome") == "completed"),
                  waits=[float(r.get("waited", 0.0)) for r in waits],
                  waited_done=sum(1 for r in waits if r.get("predecessors_done")))


# ------------------------------------------------------------------------------------------------ chaos


def skipped_chaos() -> Headline:
    """Measurement 3's place in a quick run's summary: where CI measures it instead."""
    print("\n## chaos campaign: not run with --quick (CI's chaos step runs 10 seeds, every fault kind, and prints "
          "scenarios/min)", flush=True)
    return Headline(name="chaos scenarios per minute", figure="not measured with --quick",
                    target=f">= {CHAOS_TARGET:g}: CI's chaos step prints it for its 10 runs", met=None)


def chaos(deployment: LocalDeployment, quick: bool, state_root: Path) -> tuple[list[Headline], bool]:
    """Measurement 3: a chaos campaign with every fault kind; (headlines, whether its logs should be kept)."""
    runs = 1 if quick else 3
    workload = Workload(sheets=2, clients=2, edits=10) if quick else Workload()
    print(f"\n## chaos campaign ({runs} runs, faults all, seed {CHAOS_SEED}; {workload.planned_edits} edits a run)",
          flush=True)
    started = time.monotonic()
    campaign = Campaign(dict(deployment.endpoints), profile=deployment.profile, region=deployment.region,
                        state_root=state_root, workload=workload, prefix="bench-chaos")
    print(f"provisioned in {time.monotonic() - started:.1f} s")
    print(f"{'run':>4}{'seed':>6}{'seconds':>9}{'faults':>8}{'snapshots':>11}{'quiescent':>11}  result")

    def line(run: RunReport) -> None:
        quiet = "-" if run.quiescence_seconds is None else f"{run.quiescence_seconds:.1f} s"
        print(f"{run.run:>4}{run.seed:>6}{run.seconds:>9.1f}{sum(run.faults.values()):>8}{run.snapshots:>11}"
              f"{quiet:>11}  {'ok' if run.ok else 'VIOLATIONS: ' + '; '.join(run.violations[:3])}", flush=True)

    try:
        result = campaign.run(CHAOS_SEED, runs, faults="all", on_run=line)
    finally:
        campaign.close(keep=False)
    totals = result.totals()
    per_minute = float(totals["scenarios_per_minute"] or 0.0)
    failed = int(totals["failed_runs"])
    print(f"{len(result.runs)} runs in {result.seconds:.1f} s: {per_minute:.2f} scenarios/min, "
          f"{sum(totals['faults'].values())} faults injected, "
          + ("all ok" if result.ok else f"{failed} run(s) with violations"))
    if not result.ok:
        print(result.render())
    return [Headline(name="chaos scenarios per minute",
                     figure=f"{per_minute:.2f} ({len(result.runs)} runs in {result.seconds:.0f} s, "
                            + ("all verified ok)" if result.ok else f"{failed} with violations)"),
                     target=f">= {CHAOS_TARGET:g}, every run ok",
                     met=per_minute >= CHAOS_TARGET and result.ok)], not result.ok


if __name__ == "__main__":
    deployed(__doc__.splitlines()[0], run)
