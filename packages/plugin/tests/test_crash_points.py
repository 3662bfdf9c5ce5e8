"""seglog's crash points, as its template declares them to the emulator (Metadata SeglogEmulator CrashPoints), are
the ones its code has (seglog_core.crashpoints owns the names; the template must agree)."""

from __future__ import annotations

from seglog_awsmodel.template import crash_points_of, emulator_metadata, load_template
from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS


def test_the_template_declares_the_points_of_the_worker_and_the_router() -> None:
    template = load_template(None)
    assert {"SnapshotWorkerFunction": WORKER_CRASH_POINTS, "StreamRouterFunction": (ROUTER_AFTER_SEND,)} == \
        crash_points_of(template)
    assert "seglog_core.crashpoints" == emulator_metadata(template)["InvocationHook"]
