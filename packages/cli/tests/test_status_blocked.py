"""seglog's section of `seglog emulate status` (seglog_cli.blocked): the snapshots blocked until newer code is
deployed, which only the pending table knows, merged into the emulator's status (issue 36: the emulator's status
reads its state directory only; the application adds what only it knows)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from seglog_aws.clients import client, local_session
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore
from seglog_cli.blocked import BlockedSnapshots
from seglog_cli.emulator_commands import emulator_state_dir
from seglog_core.memory import InMemoryPendingStore
from seglog_core.schema import PendingSnapshot
from seglog_emulator.status import read_status


def test_snapshots_blocked_until_newer_code_are_listed_with_their_reason(tmp_path: Path) -> None:
    """Only the pending table knows them; the status must name each one and why, or a stalled pipeline looks
    idle."""
    pending = InMemoryPendingStore()  # passes the PendingStore contract suite, as DynamoDB does
    log_id = uuid.uuid4()
    reason = "entry 0/4 has type 'pivot', unknown to this code: deploy newer code of the snapshot worker"
    pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=5, created=1, modified=1, blocked=reason))
    pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=9, created=1, modified=1))  # only waiting
    section = BlockedSnapshots.read(pending)
    found = read_status(tmp_path / "nothing", app=section)
    assert [(str(log_id), 0, 5, reason)] == [(b.log_id, b.segment, b.entry, b.reason) for b in section.blocked or []]
    assert (f"  snapshots blocked: 1 (deploy newer code of the snapshot worker)\n    {log_id} 0/5: {reason}"
            in found.render())
    assert reason == json.loads(json.dumps(found.to_dict()))["blocked"][0]["reason"]
    assert "snapshots blocked" not in read_status(tmp_path / "nothing").render()  # not asked: not claimed
    assert "blocked" not in read_status(tmp_path / "nothing").to_dict()


def test_a_pending_table_that_does_not_answer_still_leaves_the_rest_of_the_status(tmp_path: Path) -> None:
    """The stack may be down while the emulator's state is still worth reading: say the table did not answer."""
    closed = client("dynamodb", session=local_session("us-east-1"), endpoint_url="http://127.0.0.1:9")
    section = BlockedSnapshots.read(DynamoDBPendingStore(closed, table="nowhere"))
    found = read_status(tmp_path, app=section)
    assert (None, "not running") == (section.blocked, found.state)
    assert section.pending_error is not None and "cannot connect" in section.pending_error
    assert "snapshots blocked: unknown (the pending table did not answer: " in found.render()
    assert found.render().startswith("emulator: not running")


def test_each_stack_keeps_its_emulator_state_apart(tmp_path: Path) -> None:
    """Checkpoints, faults and alarms of one app's emulator never show in another's status: seglog's stack keeps
    emulator/, another stack emulator-<name>/ (emulate and emulate status agree through one function)."""
    assert tmp_path / "emulator" == emulator_state_dir(tmp_path, "seglog")
    assert tmp_path / "emulator-orders" == emulator_state_dir(tmp_path, "orders")
