"""Clients in the world: their requests pass the API handler as payload 2.0 events, seglog_client's own retry code
decides what is sent again, and what readers and writers were told is checked against the log."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_awsmodel.faults import FaultKind
from seglog_client import set_cell
from seglog_client.errors import ApiError
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.schema import SetCell
from seglog_services.api.routes import hosting
from seglog_sim import quiet_logs
from seglog_sim.aws.dynamodb import SimDynamoDBClient
from seglog_sim.aws.s3 import SimS3Client
from seglog_sim.checks import _history_of, bodies_unchanged, loads_are_states, reuses_stored
from seglog_sim.gateway import Answer
from seglog_sim.phases import Run, build
from seglog_sim.scenario import Scenario
from seglog_sim.workload import Ledger, Load
from seglog_sim.world import World

quiet_logs()
#: No faults unless a test turns some on.
CALM = Scenario(faults=())


@pytest.fixture
def world() -> Iterator[Callable[[Callable[[Run], Any], Scenario], tuple[Run, Any]]]:
    """Runs ``body(run)`` as a client task of a world without faults (unless the test turns some on); returns the
    run and what the body returned (its exception re-raised)."""

    def go(body: Callable[[Run], Any], scenario: Scenario = CALM) -> tuple[Run, Any]:
        run = build(7, scenario)

        def driver(w: World) -> None:
            w.spawn("tester", "client", body, run)

        with hosting(run.lambdas.api_services()):
            try:
                run.world.run(driver)
            finally:
                run.world.close()
        task = next(t for t in run.world.tasks if t.name == "tester")
        if task.error is not None:
            raise task.error
        return run, task.result

    yield go


def _recording(run: Run) -> list[tuple[str, str, bytes, Answer | None]]:
    """Every try the gateway serves from now on: (method, target, body, answer)."""
    seen: list[tuple[str, str, bytes, Answer | None]] = []
    serve = run.clients.gateway.serve

    def recorder(method: str, target: str, headers: list[tuple[str, str]], body: bytes,
                 timeout: float) -> Answer | None:
        answer = serve(method, target, headers, body, timeout)
        seen.append((method, target, body, answer))
        return answer

    run.clients.gateway.serve = recorder  # type: ignore[method-assign]
    return seen


def test_a_malformed_request_gets_the_api_handlers_400_through_the_clients_error(world: Any) -> None:
    def body(run: Run) -> ApiError:
        log_id = uuid.UUID(int=1, version=4)
        client = run.clients.client()
        client.create(log_id)
        with pytest.raises(ApiError) as raised:  # no entry_id: the route's retry_position refuses it
            client.request("POST", f"/sheets/{log_id}/entries", {"entry": {"type": "set", "ref": "B2", "value": 1}})
        return raised.value

    run, error = world(body)
    assert (error.status, error.code) == (400, "missing_entry_id")
    invocations = [t for t in run.world.tasks if t.kind == "api"]
    # The API function ran on the event (create, then the refused append), and answered what the client raised.
    assert [t.result["statusCode"] for t in invocations] == [201, 400]


def test_a_lost_answer_makes_the_client_resend_the_same_entry_id_and_since(world: Any) -> None:
    def body(run: Run) -> Any:
        log_id = uuid.UUID(int=2, version=4)
        seen = _recording(run)
        armed = [False]
        inner = run.clients.gateway.serve

        def once(*args: Any) -> Answer | None:
            run.faults.active = armed[0]
            armed[0] = False  # only this try's answer is lost
            return inner(*args)

        run.clients.gateway.serve = once  # type: ignore[method-assign, assignment]
        client = run.clients.client()
        client.create(log_id)
        run.faults.profile.rates[FaultKind.LOST_RESPONSE] = 1.0  # the answer is lost: applied, never delivered
        armed[0] = True
        answer = client.append(log_id, set_cell("B2", 5), entry_id=uuid.UUID(int=3, version=4))
        return seen, answer

    run, (seen, answer) = world(body)
    posts = [(target, sent, reply) for method, target, sent, reply in seen if target.endswith("/entries")]
    assert len(posts) == 2
    (_, first, lost), (_, second, answered) = posts
    assert lost is None and answered is not None and answered[0] == 200
    assert first == second  # the identical request: same entry_id, same since
    assert answer.deduplicated  # the first try had stored it
    store, blobs = _stores(run)
    stored = [e for entries in _history_of(store, blobs, uuid.UUID(int=2, version=4)) for e in entries or ()
              if e.entry_id == answer.entry_id]
    assert len(stored) == 1  # stored once, by the try whose answer was lost


def _paged_load_between_writes(run: Run) -> tuple[uuid.UUID, Load]:
    """A sheet of several pages; a write lands between the first page of a load and the next."""
    log_id = uuid.UUID(int=4, version=4)
    writer = run.clients.client()
    writer.create(log_id)
    for row in range(1, 7):
        writer.append(log_id, set_cell(f"A{row}", "x" * 30))
    serve = run.clients.gateway.serve

    def between_pages(method: str, target: str, *rest: Any) -> Answer | None:
        answer = serve(method, target, *rest)
        if method == "GET" and "cursor=" not in target:
            writer.append(log_id, set_cell("A6", "changed between pages"))
        return answer

    run.clients.gateway.serve = between_pages  # type: ignore[method-assign, assignment]
    sheet = run.clients.client().load(log_id)
    run.clients.gateway.serve = serve  # type: ignore[method-assign]
    return log_id, Load(client="reader", at=run.world.now, log_id=log_id,
                        position=(sheet.position.segment, sheet.position.num), rows=sheet.rows, pages=sheet.pages)


def _stores(run: Run) -> tuple[DynamoDBLogStore, S3BlobStore]:
    """The run's log and bucket as the checks read them (no faults)."""
    return (DynamoDBLogStore(SimDynamoDBClient.of(run.ddb), segments_table=run.topology.segments_table,
                             entries_table=run.topology.entries_table),
            S3BlobStore(SimS3Client.of(run.s3), bucket=run.topology.bucket))


def _load_violations(run: Run, log_id: uuid.UUID, load: Load) -> list[Any]:
    store, blobs = _stores(run)
    return loads_are_states(log_id, _history_of(store, blobs, log_id), blobs, [load])


def test_a_paged_load_is_one_state_of_the_log_though_a_write_lands_between_its_pages(world: Any) -> None:
    run, (log_id, load) = world(_paged_load_between_writes)
    assert load.pages >= 2
    assert "changed between pages" not in str(load.rows)  # the cursor pinned the state the first page read
    assert _load_violations(run, log_id, load) == []


def test_the_load_check_fails_when_the_page_cursor_stops_pinning_its_state(world: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken cursor: every next page reads the latest state instead of the one the load started from.
    monkeypatch.setattr(SheetDocument, "load_at", lambda self, log_id, snapshot, upto: self.load(log_id)[0])
    run, (log_id, load) = world(_paged_load_between_writes)
    assert load.pages >= 2
    found = _load_violations(run, log_id, load)
    assert [v.invariant for v in found] == ["LOAD"]
    assert "is not the state of the log at the position it answered" in found[0].message


def test_an_acknowledged_body_that_changed_is_a_violation(world: Any) -> None:
    def body(run: Run) -> tuple[uuid.UUID, Any]:
        log_id = uuid.UUID(int=5, version=4)
        client = run.clients.client()
        client.create(log_id)
        return log_id, client.append(log_id, set_cell("C3", 1), entry_id=uuid.UUID(int=6, version=4))

    run, (log_id, answer) = world(body)
    ledger = Ledger()
    ledger.ack(log_id, answer.entry_id, SetCell(row=3, col=3, value=1))
    store, blobs = _stores(run)
    assert bodies_unchanged(_history_of(store, blobs, log_id), blobs, ledger) == []
    ledger.bodies[answer.entry_id] = SetCell(row=3, col=3, value=2)  # what the client sent, had it been this
    assert [v.invariant for v in bodies_unchanged(_history_of(store, blobs, log_id), blobs, ledger)] == ["I3"]



def test_a_reuse_whose_first_entry_retention_deleted_is_unseen_whatever_its_client_heard() -> None:
    """The server finds an id by reading the log, so a reuse whose first entry retention deleted is stored again
    (README "Appending exactly once"): the checks leave its id alone whether its client heard the answer or
    vanished after the copy was stored (seed 5562); a reuse answered as stored while its first entry is still
    there is a violation."""
    store = InMemoryLogStore()
    event_log = EventLog(store=store, blobs=InMemoryBlobStore())
    deleted_log, live_log = event_log.create(), event_log.create()
    assert store.mark_retiring(deleted_log, 0)
    store.delete_segment(deleted_log, 0)
    never_heard, heard, seen = (uuid.UUID(int=n, version=4) for n in (1, 2, 3))
    ledger = Ledger()
    ledger.reuses += [(deleted_log, never_heard, (0, 1)), (deleted_log, heard, (0, 2)), (live_log, seen, (0, 1))]
    ledger.accepted_wrongly += [(deleted_log, heard, (0, 2), "heard"), (live_log, seen, (0, 1), "seen")]
    found, unseen = reuses_stored(store, ledger)
    assert unseen == {never_heard, heard}
    assert [(v.invariant, v.message) for v in found] == [("I2", "seen")]
