"""seglog's own chaos on the interface any app's chaos uses (issue 37, point 2): its workload and its I1-I6 check as
``workload(app)`` and ``check(app)`` (seglog_plugin.chaos.as_app), run through the pytest plugin's ``sam_app`` on
seglog's template under faults, pass; and the same check fails a run whose clients were told of an append the log
does not hold (I2), so a pass means something."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from seglog_emulator.appchaos.app import App
from seglog_emulator.faults.runtime import read_injected
from seglog_emulator.pytest_plugin import RUNS
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.chaos.as_app import check, workload

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.mark.seglog_chaos(faults="worker_crash=0.5,crash_after_call=0.1,duplicate_delivery=0.5,ddb_lost_response,"
                                 "lost_response", seed=1000)
def test_seglogs_workload_and_invariants_hold_on_the_interface_any_app_uses(sam_app: Callable[..., App],
                                                                           request: pytest.FixtureRequest) -> None:
    app = sam_app(TEMPLATE, dict(CHAOS_PARAMETERS))
    workload(app)
    app.settle()
    assert check(app) == []
    [(_seed, _faults, directory)] = request.node.stash[RUNS]
    fired = {fault["kind"] for fault in read_injected(Path(directory) / "faults")}
    assert {"worker_crash", "crash_after_call", "duplicate_delivery"} <= fired, fired
    log_ids, stats = app.shared["seglog"]
    assert len(log_ids) == 2 and sum(len(ids) for ids in stats.acknowledged.values()) > 0
    stats.acknowledged[log_ids[0]].append(uuid.uuid4())  # an append a client was told of, which the log lacks
    found = check(app)
    assert any(line.startswith("I2: ") for line in found), found
