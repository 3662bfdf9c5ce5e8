"""A hot sheet through the real HTTP API (issue 35): 16 signed clients on one sheet through the emulator, beside
one client alone, with the figures the simulated hot-sheet benchmark prints.

Run: uv run --no-sync python -m bench.bench_hot_http [--profile dynamodb-local|localstack|both] [--quick]

The emulator runs the template as it deploys, without faults, on resources of its own. After a warm-up sheet (so
every function's cold start is behind us), one client edits a sheet of its own as fast as its answers come for
SECONDS; then CLIENTS clients, each with its own SeglogClient and its own ``since`` (each answer's position), edit
one new sheet together for as long. Each phase is metered from the emulator's log lines of its own window
(bench_cost.price): failed conditional writes per acknowledged append (a put that lost the sheet's next num: with
the API's rebase, DESIGN §3, each costs one more PutItem, not a pause and a Query), Lambda ms billed per append, and
$ per million appends at list prices.

No target: the local stack, the 16 clients and the functions share two cores, so the ratio measures this machine as
much as the protocol (the simulated benchmark, bench_hot_sheet, measures the protocol where hosts are separate).
It is printed with the load average beside it. LocalStack and DynamoDB Local do not meter a partition's throughput,
so no throttle is possible here: the simulated benchmark models those.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from bench.bench_cost import WARM_EDITS, Priced, price
from bench.bench_pipeline import Measured, edit_concurrently, emulated, read_log, wall
from bench.support import Headline, deployed, percentile, scratch
from seglog_client import Credentials, SeglogClient
from seglog_stack.local import LocalDeployment

CLIENTS = 16
#: Quick (CI's bench step): 5 s a phase, a smaller sample that shows the benchmark still runs (its figure has no
#: target; the protocol's figures under contention are bench_hot_sheet's).
SECONDS, QUICK_SECONDS = 30.0, 5.0


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One phase's client-side figures and its bill."""

    clients: int
    measured: Measured
    priced: Priced

    @property
    def goodput(self) -> float:
        return len(self.measured.acks) / max(self.measured.seconds, 1e-9)

    def answer_ms(self, q: float) -> float:
        return 1000 * percentile(self.measured.answers, q) if self.measured.answers else float("nan")

    @property
    def refused_per_append(self) -> float:
        return self.priced.conditional_failures / self.priced.appends if self.priced.appends else float("nan")

    def line(self) -> str:
        per_million = self.priced.ledger.per_million_appends
        dollars = "n/a" if per_million is None else f"${per_million:.2f}"
        return (f"{self.clients:>3} client(s): {len(self.measured.acks):,} appends in {self.measured.seconds:.1f} s = "
                f"{self.goodput:.1f}/s; answer p50 {self.answer_ms(50):.0f} ms, p99 {self.answer_ms(99):.0f} ms; "
                f"refused writes per append {self.refused_per_append:.2f}; Lambda billed "
                f"{self.priced.per_append_ms():.1f} ms per append; {dollars} per million appends; "
                f"{len(self.measured.failures)} client(s) gave up; load average {self.measured.load:.1f}")


def _phase(url: str, credentials: Credentials, client: SeglogClient, clients: int, seconds: float) -> Measured:
    """``clients`` clients on one new sheet, as fast as answered, for ``seconds``."""
    sheet = client.create().log_id
    measured = Measured()
    measured.since = time.time()
    started = time.monotonic()
    edit_concurrently(url, credentials, [sheet] * clients, measured, rate=1_000.0, until=started + seconds)
    measured.seconds = time.monotonic() - started
    measured.load = os.getloadavg()[0]
    if len(measured.acks) != len(measured.answers):
        measured.failures.append(f"{len(measured.answers)} answers named {len(measured.acks)} positions: two "
                                 "acknowledged appends were answered the same position")
    return measured


def run(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    seconds = QUICK_SECONDS if quick else SECONDS
    print(f"\n## a hot sheet through the HTTP API (bench_hot_http: 1, then {CLIENTS} clients on one sheet, "
          f"{seconds:.0f} s each, no faults)", flush=True)
    windows: list[tuple[int, Measured, float]] = []
    with scratch("seglog-bench-hot-") as work:
        log_path = work / "emulator.log"
        with emulated(deployment, prefix="bench-hot", parameters={}, work=work, log_path=log_path) as (_, sup, _):
            url, credentials = sup.api_url, sup.settings.api_credentials[0]
            client = SeglogClient(url, credentials=credentials)
            edit_concurrently(url, credentials, [client.create().log_id], Measured(), rate=20.0, count=WARM_EDITS)
            for clients in (1, CLIENTS):
                measured = _phase(url, credentials, client, clients, seconds)
                windows.append((clients, measured, time.time()))
        records = read_log(log_path)
    phases = [Phase(clients=clients, measured=measured, priced=price([r for r in records if wall(r) < until],
                                                                     measured.since))
              for clients, measured, until in windows]
    for phase in phases:
        print(phase.line())
        for failure in phase.measured.failures[:5]:
            print(f"  ! {failure}")
    one, many = phases
    ratio = many.goodput / one.goodput if one.goodput else float("nan")
    figure = (f"{ratio:.2f}x ({many.goodput:.1f}/s against {one.goodput:.1f}/s; p99 {many.answer_ms(99):.0f} ms "
              f"against {one.answer_ms(99):.0f} ms; refused writes per append {many.refused_per_append:.2f}; load "
              f"average {many.measured.load:.1f} on {os.cpu_count()} CPUs)")
    return [Headline(name=f"{CLIENTS} HTTP clients goodput / 1 client", figure=figure,
                     target="printed, no target (the stack and the clients share the CPUs)",
                     met=None if not (one.measured.failures or many.measured.failures) else False)]


if __name__ == "__main__":
    deployed(__doc__.splitlines()[0], run)
