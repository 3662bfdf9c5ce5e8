"""Row maps: where a row ends up after a run of row inserts and deletes, as a piecewise shift.

Between two snapshots there are few entries (hundreds) but maybe a million rows. Rather than push every row
through every InsertRow/DeleteRow, a build composes the row operations into one :class:`RowMap`: sorted
breakpoints, each starting a run of rows that all move by the same offset, or are deleted. Each operation adds
at most two breakpoints, so looking a row up is one bisect over O(operations) breakpoints, and composing an
operation onto a map costs O(breakpoints).

The meaning of each operation follows the fold (:meth:`seglog_core.sheet.Sheet.apply`):

* ``InsertRow(after=a)``: rows ``<= a`` stay, rows ``a < r < MAX_ROW`` move down one, row ``MAX_ROW`` falls off
  the end of the worksheet. The inserted row has no preimage: it is a new row, not a moved one.
* ``DeleteRow(row=d)``: rows ``< d`` stay, row ``d`` is gone, rows ``> d`` move up one.

A map is monotonic (it never reorders rows) and injective on the rows it keeps.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Final

from seglog_core.sheet.refs import MAX_ROW

#: Beyond any row: the end of the last run.
_END: Final = 1 << 62


class RowMap:
    """A map from row numbers (from 1) to row numbers or ``None`` (deleted), piecewise a constant shift.

    Run ``i`` covers rows ``starts[i] .. starts[i + 1] - 1`` (the last run is unbounded) and maps row ``r`` to
    ``r + offsets[i]``, or deletes it when ``offsets[i]`` is ``None``. Adjacent runs never share an offset.
    """

    __slots__ = ("_offsets", "_starts")

    def __init__(self, starts: list[int], offsets: list[int | None]) -> None:
        if not starts or starts[0] != 1 or len(starts) != len(offsets):
            raise ValueError("a RowMap needs runs starting at row 1, one offset per run")
        self._starts = starts
        self._offsets = offsets

    @classmethod
    def identity(cls) -> RowMap:
        """Every row stays where it is."""
        return cls([1], [0])

    @classmethod
    def insert(cls, after: int) -> RowMap:
        """The map of ``InsertRow(after=after)``, ``0 <= after < MAX_ROW``."""
        if not 0 <= after < MAX_ROW:
            raise ValueError(f"rows are inserted after 0..{MAX_ROW - 1}, not {after}")
        return cls._of_runs([(1, 0), (after + 1, 1), (MAX_ROW, None)])

    @classmethod
    def delete(cls, row: int) -> RowMap:
        """The map of ``DeleteRow(row=row)``, ``1 <= row <= MAX_ROW``."""
        if not 1 <= row <= MAX_ROW:
            raise ValueError(f"rows are 1..{MAX_ROW}, not {row}")
        return cls._of_runs([(1, 0), (row, None), (row + 1, -1)])

    @classmethod
    def _of_runs(cls, runs: list[tuple[int, int | None]]) -> RowMap:
        """Build from ``(start, offset)`` runs in order; empty runs (a start equal to the next) are dropped."""
        starts: list[int] = []
        offsets: list[int | None] = []
        for i, (start, offset) in enumerate(runs):
            if i + 1 < len(runs) and runs[i + 1][0] <= start:
                continue
            if offsets and offsets[-1] == offset:
                continue
            starts.append(start)
            offsets.append(offset)
        return cls(starts, offsets)

    def __call__(self, row: int) -> int | None:
        """Where ``row`` ends up, or ``None`` if it is deleted."""
        offset = self._offsets[bisect_right(self._starts, row) - 1]
        return None if offset is None else row + offset

    def __len__(self) -> int:
        """The number of runs."""
        return len(self._starts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowMap):
            return NotImplemented
        return self._starts == other._starts and self._offsets == other._offsets

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        runs = ", ".join(
            f"{s}:{'del' if o is None else f'{o:+d}'}" for s, o in zip(self._starts, self._offsets, strict=True)
        )
        return f"RowMap({runs})"

    def then(self, after: RowMap) -> RowMap:
        """The map that applies this one, then ``after``: ``row -> after(self(row))``.

        Walks this map's runs and, for each, the runs of ``after`` its image crosses: O(len(self) + len(after)).
        """
        starts: list[int] = []
        offsets: list[int | None] = []

        def emit(start: int, offset: int | None) -> None:
            if offsets and offsets[-1] == offset:
                return
            starts.append(start)
            offsets.append(offset)

        a_starts, a_offsets = after._starts, after._offsets
        n_after = len(a_starts)
        mine = self._starts
        for i, offset in enumerate(self._offsets):
            start = mine[i]
            end = mine[i + 1] - 1 if i + 1 < len(mine) else _END
            if offset is None:
                emit(start, None)
                continue
            # This run's image is start+offset .. end+offset; cut it where the runs of `after` change.
            j = bisect_right(a_starts, start + offset) - 1
            pos = start
            while pos <= end:
                a_offset = a_offsets[j]
                emit(pos, None if a_offset is None else offset + a_offset)
                j += 1
                if j == n_after:
                    break
                pos = a_starts[j] - offset
        return RowMap(starts, offsets)
