"""The client's batch limits are the API's (issue 35): seglog_client imports no server code, so it keeps its own
copy of the limits and bounds an edit's stored size from its own form; these tests hold both to the core's."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_client import delete_row, insert_row, set_cell, set_range
from seglog_client.batcher import _FRAME, BATCH_BYTES, MAX_EDITS, stored_size_bound
from seglog_client.entries import Edit
from seglog_core.schema import MAX_EDITS as CORE_MAX_EDITS
from seglog_core.schema import MAX_EDITS_BYTES, Edits, encode_body
from seglog_core.sheet import MAX_COL, MAX_ROW, column_letters
from seglog_core.sheet.refs import MAX_INT, MIN_INT
from seglog_services.api.schemas import EditIn, to_body


def test_the_client_keeps_the_apis_limits() -> None:
    assert (CORE_MAX_EDITS, MAX_EDITS_BYTES) == (MAX_EDITS, BATCH_BYTES)


refs = st.builds(lambda col, row: f"{column_letters(col)}{row}", st.integers(1, MAX_COL), st.integers(1, MAX_ROW))
values = st.one_of(st.none(), st.booleans(), st.integers(MIN_INT, MAX_INT), st.floats(allow_nan=False,
                   allow_infinity=False), st.text(max_size=40))
edits = st.one_of(
    st.builds(set_cell, refs, values),
    st.builds(set_range, refs, st.lists(st.lists(values, max_size=3), max_size=3)),
    st.builds(insert_row, st.integers(0, MAX_ROW - 1), st.lists(values, max_size=4)),
    st.builds(delete_row, st.integers(1, MAX_ROW)),
)


def core_edit(edit: Edit) -> object:
    """The core body the API makes of ``edit``: through its JSON, as the API decodes it."""
    return to_body(msgspec.json.decode(msgspec.json.encode(edit), type=EditIn))


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(edits, min_size=1, max_size=30))
def test_the_clients_bound_is_never_below_the_stored_size(batch: list[Edit]) -> None:
    stored = len(encode_body(Edits(edits=[core_edit(e) for e in batch])))  # type: ignore[misc]
    assert stored <= _FRAME + sum(stored_size_bound(e) for e in batch)
