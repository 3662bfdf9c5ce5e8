"""seglog's own chaos on the interface any app's chaos uses (issue 37, point 2): its workload and its I1-I6 check as
``workload(app)`` and ``check(app)``, run by the same runner, under the same faults, as a user's app::

    seglog chaos --template template.yaml \\
        --workload packages/plugin/src/seglog_plugin/chaos/as_app.py \\
        --check packages/plugin/src/seglog_plugin/chaos/as_app.py \\
        --parameter SnapshotEvery=10 --parameter SnapshotWorkerTimeout=3 ... --seed 1000 --runs 2

The workload is the chaos clients' (:class:`~.workload.Workload`: sheets edited concurrently through the signed HTTP
API, every id drawn from the seed); the check waits for seglog's quiescence (every snapshot complete, no pending
item, an empty queue; I5's bound) and judges I1-I6 of every sheet with the entry ids the clients were acknowledged,
the clients' give-ups and the dead-letter queue (:mod:`.verdict`, which seglog's own runner uses too).

What seglog's own runner (``seglog chaos`` without ``--template``) adds to this: the faults only seglog has (``dlq``,
``redrive``, ``mixed_version``, which change its stack's parameters and code version), the snapshot watcher's
timeline on the report, and coverage rounds that arm the crash points earlier runs missed.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from seglog_emulator.appchaos.app import App
from seglog_plugin.chaos.verdict import await_quiescence, verify_sheets
from seglog_plugin.chaos.watch import SnapshotWatcher
from seglog_plugin.chaos.workload import ApiClient, ClientStats, Workload
from seglog_plugin.resources import backend_of, resources_of

#: The clients of one run: two sheets, three clients each, ten edits each.
WORKLOAD: Final = Workload(sheets=2, clients=3, edits=10)
#: I5's bound: after the app is quiet, every snapshot completes within this.
QUIESCENCE_SECONDS: Final = 120.0
#: Where the workload leaves the run's sheets and what their clients were told, for the check.
_SHARED: Final = "seglog"


def workload(app: App) -> None:
    """Create the run's sheets and edit them concurrently through the API, signing as the gateway requires."""
    stats = ClientStats()
    client = ApiClient(app.api_url(), stats, app.credentials)
    log_ids = WORKLOAD.create(client, app.seed, app.run)
    app.shared[_SHARED] = (log_ids, stats)
    WORKLOAD.run(app.api_url(), log_ids, app.seed, stats, app.credentials)


def check(app: App) -> list[str]:
    """seglog's invariants after the run: quiescence within its bound, then I1-I6 of every sheet."""
    found: Any = app.shared.get(_SHARED)
    if found is None:
        return ["the workload created no sheet (it raised first): nothing to verify"]
    log_ids: list[uuid.UUID]
    log_ids, stats = found
    backend, resources = backend_of(app.deployment), resources_of(app.deployment)
    _, late = await_quiescence(backend, log_ids, SnapshotWatcher(backend, log_ids), resources.queue_url,
                               resources.dlq_url, QUIESCENCE_SECONDS)
    violations, _ = verify_sheets(backend, log_ids, stats, resources.dlq_url)
    return [f"{v.invariant}: {v.message}" for v in ([late] if late is not None else []) + violations]
