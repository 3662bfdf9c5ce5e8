"""Property: concurrent appenders facing stale query results, lost responses and throttling always leave a
gap-free log holding every acknowledged append exactly once (DESIGN §6 I1, I2)."""

from __future__ import annotations

import random
import threading
import uuid

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from faults import FaultyLogStore
from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.ports import BlobStore, LogStore
from seglog_core.reader import LogReader
from seglog_core.retry import RetryPolicy
from seglog_core.schema import SetCell
from seglog_core.verify import verify_log

faults = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "writers": st.integers(2, 6),
    "appends": st.integers(1, 6),
    "stale": st.sampled_from([0.0, 0.3, 0.7]),
    "lost": st.sampled_from([0.0, 0.2, 0.5]),
    "throttle": st.sampled_from([0.0, 0.1]),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=faults)
def test_concurrent_appends_under_faults_are_gap_free_and_exactly_once(
    stores: tuple[LogStore, BlobStore], plan: dict[str, float]
) -> None:
    note(f"fault plan {plan}")
    store, blobs = stores
    log_id = EventLog(store=store, blobs=blobs).create()
    acknowledged: list[uuid.UUID] = []
    gave_up: list[uuid.UUID] = []
    lock = threading.Lock()
    injected: list[FaultyLogStore] = []

    def writer(index: int) -> None:
        faulty = FaultyLogStore(store, random.Random(int(plan["seed"]) + index), stale=plan["stale"],
                                lost=plan["lost"], throttle=plan["throttle"])
        injected.append(faulty)
        retry = RetryPolicy(max_attempts=40, base=0.0005, cap=0.01, rng=random.Random(index))
        log = EventLog(store=faulty, blobs=blobs, retry=retry)  # type: ignore[arg-type]
        for n in range(int(plan["appends"])):
            entry_id = uuid.uuid4()
            try:
                log.append(log_id, SetCell(row=index + 1, col=n + 1, value=n), entry_id=entry_id)
            except errors.AppendContentionError:
                with lock:
                    gave_up.append(entry_id)
            else:
                with lock:
                    acknowledged.append(entry_id)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(int(plan["writers"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    report = verify_log(store, log_id, acknowledged=acknowledged)
    assert report.violations == []
    stored = [e.entry_id for e in LogReader(store=store).all_entries(log_id) if e.entry_id is not None]
    # Nothing but what was appended: every stored id is acknowledged or belongs to an append that gave up.
    assert set(stored) <= set(acknowledged) | set(gave_up)
    assert len(acknowledged) + len(gave_up) == plan["writers"] * plan["appends"]
