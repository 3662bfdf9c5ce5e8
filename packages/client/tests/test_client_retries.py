"""The client's side of the API's retry protocol, checked byte for byte against a scripted HTTP server: every try
of a request is the same bytes, lost answers / 5xx / 429 are tried again (after Retry-After), any other 4xx is
raised at once, and ``since`` is the latest position the client had seen."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import pytest
from fake_api import DROP, KEYS, FakeApi, Reply, appended, created, error, fake, position

from seglog_client import (
    ApiError,
    Attempt,
    Backoff,
    Counters,
    EntryIdReusedError,
    OutcomeUnknownError,
    Position,
    ProtocolError,
    RetriesExhaustedError,
    SeglogClient,
    delete_row,
    insert_row,
    set_cell,
    set_range,
)
from seglog_client.retry import retry_after
from seglog_client.transport import Response

__all__ = ["fake"]

LOG = "3f0c8a34-4b5e-4c1b-9d2a-1f6e0b7c9a01"
ENTRY = "7d9e1c2b-0a4f-4e3d-8c5b-6a7f8e9d0c12"


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client_of(fake: FakeApi, sleeps: Sleeps | None = None, **options: object) -> SeglogClient:
    options.setdefault("credentials", KEYS)
    return SeglogClient(fake.url, sleep=sleeps if sleeps is not None else Sleeps(),
                        backoff=Backoff(base=0.01, cap=0.02, rng=random.Random(1)), **options)  # type: ignore[arg-type]


def test_a_lost_answer_is_retried_with_the_identical_request(fake: FakeApi) -> None:
    """Two tries lose their answers; the third is answered. All three are the same bytes, with the entry id and
    the position of the create's answer as ``since`` (else a retry could be stored beside the first try), and
    the counters see 2 retries, 2 lost answers and a deduplicated append."""
    counters = Counters()
    client = client_of(fake, hooks=counters)
    fake.script(created(LOG), DROP, DROP, Reply(200, appended(ENTRY, 0, 1, deduplicated=True)))
    client.create(LOG)
    answer = client.append(LOG, set_cell("B2", 5), entry_id=ENTRY)
    posts = [r.body for r in fake.sent("POST")[1:]]
    expected = b'{"entry":{"ref":"B2","type":"set","value":5},"entry_id":"' + ENTRY.encode() + \
        b'","since":{"num":0,"segment":0}}'
    assert [expected] * 3 == posts
    assert (Position(segment=0, num=1), True) == (answer.position, answer.deduplicated)
    assert (4, 2, 1, 1, {"201": 1, "lost": 2, "200": 1}) == (
        counters.requests, counters.retries, counters.appends, counters.deduplicated, dict(counters.statuses))


def test_5xx_and_429_are_retried_after_what_retry_after_asks(fake: FakeApi) -> None:
    """503 with Retry-After: 2, 429 with Retry-After: 1, a bare 500, then 200: four identical tries, and the
    waits honour Retry-After (a client that ignored it would hammer a throttled API) and otherwise back off."""
    sleeps = Sleeps()
    client = client_of(fake, sleeps)
    client.note_position(LOG, Position(segment=0, num=7))
    fake.script(Reply(503, {"error": {"code": "storage_unavailable", "message": "retry"}}, {"Retry-After": "2"}),
                Reply(429, {"message": "Too Many Requests"}, {"Retry-After": "1"}),
                Reply(500, {"message": "Internal Server Error"}),
                Reply(200, appended(ENTRY, 0, 8)))
    client.append(LOG, set_cell("A1", "x"), entry_id=ENTRY)
    bodies = {r.body for r in fake.sent("POST")}
    assert (4, 1) == (len(fake.sent("POST")), len(bodies))
    assert [2.0, 1.0] == sleeps[:2]
    assert 0 <= sleeps[2] <= 0.04


@pytest.mark.parametrize("status, code", [(400, "missing_since"), (404, "log_not_found"),
                                          (409, "version_conflict"), (413, "payload_too_large")])
def test_a_4xx_is_raised_at_once_and_never_retried(fake: FakeApi, status: int, code: str) -> None:
    """A refusal is the request's fault: sending it again would be refused again (or, for a conflict, would
    hide it). One request, no wait, and the API's code, message and details in the error."""
    sleeps = Sleeps()
    client = client_of(fake, sleeps)
    fake.script(error(status, code, "fix it like this", entry={"segment": 0, "num": 3}))
    with pytest.raises(ApiError) as raised:
        client.append(LOG, set_cell("A1", 1), expected=Position(segment=0, num=3))
    assert (status, code, "fix it like this", {"entry": {"segment": 0, "num": 3}}) == (
        raised.value.status, raised.value.code, raised.value.message, raised.value.details)
    assert (1, []) == (len(fake.requests), sleeps)
    assert {"num": 3, "segment": 0} == fake.requests[0].json()["expected"]
    assert "since" not in fake.requests[0].json()


def test_a_reused_entry_id_raises_its_typed_error_naming_the_stored_position_and_is_never_retried(
        fake: FakeApi) -> None:
    """422 ``entry_id_reused``: the id names another entry; resending the same request can only be refused again,
    so the client raises at once with the stored entry's position."""
    sleeps = Sleeps()
    client = client_of(fake, sleeps)
    fake.script(error(422, "entry_id_reused", "use a new entry id", position={"segment": 1, "num": 7},
                      entry_id=str(ENTRY)))
    with pytest.raises(EntryIdReusedError) as raised:
        client.append(LOG, set_cell("A1", 2), entry_id=ENTRY, since=Position(segment=0, num=0))
    assert (422, Position(segment=1, num=7)) == (raised.value.status, raised.value.position)
    assert (1, []) == (len(fake.requests), sleeps)


def test_a_500_the_server_calls_final_is_not_retried(fake: FakeApi) -> None:
    """``corrupt_log`` is a 500 no retry can cure (an operator must act): raised after one try."""
    fake.script(error(500, "corrupt_log", "rebuild the log"))
    with pytest.raises(ApiError) as raised:
        client_of(fake).load(LOG)
    assert (500, "corrupt_log", 1) == (raised.value.status, raised.value.code, len(fake.requests))


def test_after_max_tries_the_error_names_the_last_failure_and_what_to_resend(fake: FakeApi) -> None:
    """Always 503: exactly ``max_tries`` tries with a wait between each, then an error that carries the entry id
    and ``since`` to send again — without them a caller could not repeat the append safely."""
    sleeps = Sleeps()
    client = client_of(fake, sleeps, max_tries=4)
    client.note_position(LOG, Position(segment=1, num=4))
    fake.default = error(503, "contention", "too many writers")
    with pytest.raises(RetriesExhaustedError) as raised:
        client.append(LOG, set_cell("A1", 1), entry_id=ENTRY)
    error_ = raised.value
    assert (4, 3, 503) == (len(fake.requests), len(sleeps), error_.last_status)
    assert (uuid.UUID(ENTRY), Position(segment=1, num=4)) == (error_.entry_id, error_.since)
    assert "contention" in error_.last_failure and ENTRY in str(error_) and "since=1/4" in str(error_)


def test_with_patience_a_request_is_retried_for_that_long_whatever_its_tries_count(fake: FakeApi) -> None:
    """A client told how long the API may be away (the chaos clients: a few emulator restarts) keeps trying that
    long and no longer, however many tries it takes; before, 25 quick tries gave up on a restart of 24 s."""
    now = [0.0]
    sleeps = Sleeps()

    def sleep(seconds: float) -> None:
        sleeps(seconds)
        now[0] += seconds

    client = SeglogClient(fake.url, sleep=sleep, monotonic=lambda: now[0], credentials=KEYS, max_tries=1_000,
                          patience=10.0, backoff=Backoff(base=0.1, cap=1.0, rng=random.Random(3)))
    fake.default = error(503, "contention", "too many writers")
    with pytest.raises(RetriesExhaustedError) as raised:
        client.create(LOG)
    assert sum(sleeps) <= 10.0 < sum(sleeps) + 1.0  # the next wait would have passed the patience
    assert raised.value.tries == len(fake.requests) == len(sleeps) + 1 > 10


def test_no_server_at_all_is_a_lost_answer_every_time() -> None:
    """Connection refused counts as no answer: retried, then reported as such."""
    sleeps = Sleeps()
    client = SeglogClient("http://127.0.0.1:9", max_tries=3, sleep=sleeps, credentials=KEYS)
    with pytest.raises(RetriesExhaustedError) as raised:
        client.create(LOG)
    assert (3, 2, None) == (raised.value.tries, len(sleeps), raised.value.last_status)
    assert "no answer" in raised.value.last_failure


def test_a_try_past_the_timeout_counts_as_lost_and_is_sent_again(fake: FakeApi) -> None:
    """The first answer comes after the client's timeout: the client stops waiting and resends the same bytes."""
    counters = Counters()
    client = client_of(fake, timeout=0.2, hooks=counters)
    client.note_position(LOG, Position(segment=0, num=2))
    fake.script(Reply(200, appended(ENTRY, 0, 3), delay=0.6), Reply(200, appended(ENTRY, 0, 3, deduplicated=True)))
    assert client.append(LOG, set_cell("C3", None), entry_id=ENTRY).deduplicated
    assert 1 == len({r.body for r in fake.requests})
    assert {"lost": 1, "200": 1} == dict(counters.statuses)


def test_since_is_the_latest_position_the_client_has_seen(fake: FakeApi) -> None:
    """Create answers 0/0, an append 0/1, a load 2/5, an append 2/6, then one 1/9 (older than 2/6): each append's
    ``since`` is the latest position seen before it, and never steps back (a stale ``since`` costs reads, a
    position the client never saw could skip its own first try)."""
    client = client_of(fake)
    page = {"snapshot": {"segment": 2, "num": 0, "root": "r"}, "position": position(2, 5), "row": 1, "col": 1,
            "rows": [], "next": None}
    fake.script(created(LOG), Reply(200, appended(ENTRY, 0, 1)), Reply(200, page), Reply(200, appended(ENTRY, 2, 6)),
                Reply(200, appended(ENTRY, 1, 9)), Reply(200, appended(ENTRY, 2, 7)))
    client.create(LOG)
    client.append(LOG, delete_row(1))
    client.load(LOG)
    for _ in range(3):
        client.append(LOG, delete_row(1))
    sinces = [r.json()["since"] for r in fake.sent("POST")[1:]]
    assert [position(0, 0), position(2, 5), position(2, 6), position(2, 6)] == sinces
    assert Position(segment=2, num=7) == client.position(LOG)


def test_an_unseen_sheet_starts_from_its_latest_snapshot(fake: FakeApi) -> None:
    """A client that never saw the sheet asks for its latest completed snapshot and looks from there (a position
    that exists; 0/0 may have been retired)."""
    fake.script(Reply(200, {"latest": position(3, 40), "segments": [], "pending": []}),
                Reply(200, appended(ENTRY, 3, 41)))
    client_of(fake).append(LOG, insert_row(0, ["a", 1]))
    assert ("GET", f"/sheets/{LOG}/snapshots") == (fake.requests[0].method, fake.requests[0].target)
    assert position(3, 40) == fake.requests[1].json()["since"]


def test_create_sends_a_log_id_so_that_a_retry_is_safe(fake: FakeApi) -> None:
    """Without a client-chosen id a retried create would make a second sheet; the second try's 200 with
    created=false is the same sheet."""
    fake.script(DROP, created(LOG, new=False))
    answer = client_of(fake).create()
    first, second = fake.requests
    assert first.body == second.body
    assert 4 == uuid.UUID(first.json()["log_id"]).version
    assert (False, Position(segment=0, num=0)) == (answer.created, answer.position)


def test_entry_helpers_send_the_apis_entry_bodies(fake: FakeApi) -> None:
    """Each helper's JSON is the body the API takes (a wrong tag or field is a 400 there)."""
    client = client_of(fake)
    client.note_position(LOG, Position(segment=0, num=0))
    fake.default = Reply(200, appended(ENTRY, 0, 1))
    for entry in (set_cell("B2", 5), set_range("C3", [[1, None], ["x"]]), insert_row(2, [True]), delete_row(4)):
        client.append(LOG, entry)
    assert [{"type": "set", "ref": "B2", "value": 5}, {"type": "setrng", "ref": "C3", "values": [[1, None], ["x"]]},
            {"type": "insrow", "after": 2, "values": [True]}, {"type": "delrow", "row": 4}] == [
        r.json()["entry"] for r in fake.requests]


def test_a_success_that_is_not_the_api_is_a_protocol_error(fake: FakeApi) -> None:
    """A 200 from something else (a captive portal, a wrong URL) is reported, not taken for an answer."""
    fake.script(Reply(200, b"<html>hello</html>", {"content-type": "text/html"}))
    with pytest.raises(ProtocolError, match="cannot read"):
        client_of(fake).snapshots(LOG)


def test_backoff_is_full_jitter_under_an_exponential_ceiling() -> None:
    """With the jitter at its top, waits double from base up to cap; Retry-After is a floor, bounded by max_wait."""

    class Top(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return b

    backoff = Backoff(base=0.1, cap=1.0, max_wait=5.0, rng=Top())
    assert [0.1, 0.2, 0.4, 0.8, 1.0, 1.0] == [round(backoff.delay(n), 6) for n in range(1, 7)]
    assert (3.0, 5.0) == (backoff.delay(1, retry_after=3.0), backoff.delay(1, retry_after=90.0))


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)

    def of(value: str) -> float | None:
        return retry_after(Response(status=503, headers={"retry-after": value}, body=b""), now)

    assert (7.0, 30.0, 0.0, None) == (of("7"), of("Sun, 22 Nov 2026 12:00:30 GMT"),
                                      of("Sun, 22 Nov 2026 11:00:00 GMT"), of("soon"))


# ------------------------------------------------------------------------------------------------ retry horizon
# Issue 18: a retry whose since retention deleted, whose entry is not in the retained log, is answered 410
# since_retired with the horizon and a position to resend from. The client resends only while the entry's first
# try is inside the horizon (less the margin): a resend later could store the entry a second time.

HORIZON = 3600


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def retired(resend: tuple[int, int] = (4, 0)) -> Reply:
    return error(410, "since_retired", "resend within the horizon", position=position(*resend),
                 since=position(0, 3), horizon_seconds=HORIZON, entry_id=ENTRY)


def test_a_retired_since_inside_the_horizon_is_resent_from_the_position_the_answer_names(fake: FakeApi) -> None:
    """A first try with a stale since (the client's position is older than what retention keeps) is refused 410;
    the client resends it at once with the same entry id and since = the answer's position, and notes the entry."""
    ticks = Ticks()
    client = client_of(fake, monotonic=ticks)
    client.note_position(LOG, Position(segment=0, num=3))
    fake.script(retired(), Reply(200, appended(ENTRY, 5, 2)))
    answer = client.append(LOG, set_cell("A1", 1), entry_id=ENTRY)
    sent = [r.json() for r in fake.sent("POST")]
    assert [position(0, 3), position(4, 0)] == [r["since"] for r in sent]
    assert {ENTRY} == {r["entry_id"] for r in sent}
    assert (Position(segment=5, num=2), Position(segment=5, num=2)) == (answer.position, client.position(LOG))


def test_a_retired_since_past_the_horizon_is_not_resent_and_says_the_outcome_is_unknown(fake: FakeApi) -> None:
    """The first try's answer was lost; the caller resends it (entry id and since of RetriesExhaustedError) a
    horizon later, and retention has deleted since meanwhile. The first try may be in the deleted history: the
    client must not resend (that could store it twice) but raise OutcomeUnknownError, timed from the first try."""
    ticks = Ticks()
    client = client_of(fake, monotonic=ticks, max_tries=1)
    client.note_position(LOG, Position(segment=0, num=3))
    fake.script(DROP, retired())
    with pytest.raises(RetriesExhaustedError) as lost:
        client.append(LOG, set_cell("A1", 1), entry_id=ENTRY)
    ticks.now += HORIZON - 60  # inside the horizon, but not by the margin (120 s)
    with pytest.raises(OutcomeUnknownError) as unknown:
        client.append(LOG, set_cell("A1", 1), entry_id=lost.value.entry_id, since=lost.value.since)
    assert 2 == len(fake.sent("POST"))
    assert (uuid.UUID(ENTRY), Position(segment=0, num=3), HORIZON - 60) == (
        unknown.value.entry_id, unknown.value.since, unknown.value.age)
    assert lost.value.first_try is not None
    assert abs(datetime.now(UTC).timestamp() - lost.value.first_try) < 60


def test_a_resend_from_another_client_counts_the_horizon_from_the_first_try_it_is_given(fake: FakeApi) -> None:
    """A fresh client knows nothing of the entry: ``first_try`` (RetriesExhaustedError.first_try of the client
    that tried first) is what it times the horizon from, not its own first request."""
    fake.script(retired(), retired())
    client = client_of(fake)
    with pytest.raises(OutcomeUnknownError):
        client.append(LOG, set_cell("A1", 1), entry_id=ENTRY, since=Position(segment=0, num=3),
                      first_try=datetime.now(UTC).timestamp() - HORIZON)
    assert 1 == len(fake.sent("POST"))


def test_each_try_reports_the_request_id_its_answer_named(fake: FakeApi) -> None:
    """An HTTP API names the request it answered in ``apigw-requestid`` (the id the function's event and log
    carry): each try reports its own answer's, and a lost answer none — what lets a report link a client's try
    with the invocation that served it."""
    attempts: list[Attempt] = []

    class Recorder(Counters):
        def tried(self, attempt: Attempt) -> None:
            attempts.append(attempt)

    client = client_of(fake, hooks=Recorder())
    client.note_position(LOG, Position(segment=0, num=3))
    fake.script(DROP, Reply(500, {"message": "Internal Server Error"}, {"apigw-requestid": "first="}),
                Reply(200, appended(ENTRY, 0, 4), {"Apigw-Requestid": "second="}))
    client.append(LOG, set_cell("A1", 1), entry_id=ENTRY)
    assert [(None, None), (500, "first="), (200, "second=")] == [(a.status, a.request_id) for a in attempts]


#: S3's answer to a second PUT of a URL that writes once (If-None-Match: *).
PRECONDITION_FAILED = (b"<?xml version='1.0' encoding='utf-8'?>\n<Error><Code>PreconditionFailed</Code><Message>At "
                       b"least one of the pre-conditions you specified did not hold</Message></Error>")


def test_a_retried_upload_put_refused_412_found_its_first_try_and_the_upload_completes(fake: FakeApi) -> None:
    """The presigned URL writes once (its signed If-None-Match: *): when the answer to the first PUT is lost, S3
    answers the retry 412 PreconditionFailed because the first one stored the bytes. The URL is this call's alone,
    so the client takes that as stored and completes the upload."""
    client = SeglogClient(fake.url, credentials=KEYS, sleep=lambda _: None,
                          backoff=Backoff(base=0.0, cap=0.0, rng=random.Random(1)))
    fake.script(Reply(200, {"latest": None, "segments": [], "pending": []}),
                Reply(201, {"upload_id": "0b6f2c9e-1d3a-4f5b-8e7c-2a9d4b6c8e10", "key": "k", "url": f"{fake.url}/put",
                            "method": "PUT", "expires_in": 900,
                            "headers": {"Content-Type": "text/csv", "If-None-Match": "*"}}),
                DROP, Reply(412, PRECONDITION_FAILED, {"content-type": "application/xml"}),
                Reply(200, appended(ENTRY, 0, 1)))

    answer = client.upload(LOG, b"a\n1\n", "text/csv", "imp", entry_id=ENTRY)

    assert (0, 1) == (answer.segment, answer.num)
    puts = fake.sent("PUT")
    assert [(b"a\n1\n", "*")] * 2 == [(put.body, put.headers.get("if-none-match")) for put in puts]
    assert 1 == len([r for r in fake.requests if r.target.endswith("/complete")])
