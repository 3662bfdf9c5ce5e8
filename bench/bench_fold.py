"""Measure the sheet fold: entries applied per second, in process (target: >= 200k SetCell/s).

Run: uv run --no-sync python bench/bench_fold.py [N]

Prints one line per workload: SetCell only (the bulk of a real log), SetCell decoded from msgpack first (what
loading does), a mix with row inserts/deletes, and the snapshot serialization round trip of the result.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Sequence

from seglog_core.schema import (
    Body,
    CellValue,
    DeleteRow,
    EntryType,
    InsertRow,
    SetCell,
    SetRange,
    decode_body,
    encode_body,
)
from seglog_core.sheet import Sheet, fold


def set_cells(rng: random.Random, n: int) -> list[Body]:
    """Random SetCell over a 2000 x 26 grid; one in six clears a cell; values of every type."""
    values: Sequence[CellValue] = (1, 2.5, True, "text", "a longer text value", None)
    return [
        SetCell(row=rng.randint(1, 2000), col=rng.randint(1, 26), value=rng.choice(values)) for _ in range(n)
    ]


def mixed(rng: random.Random, n: int) -> list[Body]:
    """Mostly SetCell, with 5% row inserts, 5% row deletes and 2% small ranges."""
    bodies = set_cells(rng, n)
    for i in range(0, n, 10):
        bodies[i] = (
            InsertRow(after=rng.randint(0, 2000), values=["new", 1])
            if i % 20
            else DeleteRow(row=rng.randint(1, 2000))
        )
    for i in range(5, n, 50):
        bodies[i] = SetRange(row=rng.randint(1, 2000), col=1, values=[[1, 2, 3], ["a", "b", "c"]])
    return bodies


def rate(label: str, n: int, run: Callable[[], object], repeat: int = 3) -> None:
    best = min(_timed(run) for _ in range(repeat))
    print(f"{label:<40} {n / best:>12,.0f} entries/s  ({best * 1000:.1f} ms for {n:,})")


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500_000
    rng = random.Random(7)
    cells = set_cells(rng, n)
    rate("SetCell fold", n, lambda: fold(cells))

    encoded = [encode_body(b) for b in cells]
    decode = decode_body
    rate("SetCell decode + fold", n, lambda: fold(decode(EntryType.SET_CELL, 1, data) for data in encoded))

    mix = mixed(rng, n)
    rate("mixed fold (10% row insert/delete)", n, lambda: fold(mix))

    sheet = fold(cells)
    data = sheet.to_bytes()
    count = sheet.cell_count
    rate(f"to_bytes ({len(data):,} bytes)", count, sheet.to_bytes)
    rate("from_bytes", count, lambda: Sheet.from_bytes(data))


if __name__ == "__main__":
    main()
