"""Measure a snapshot build's peak memory: a 1M-cell sheet against a 10k-cell one (target: ratio <= 1.5).

Run: uv run --no-sync python bench/bench_snapshot_rss.py [--cells 10000 1000000] [--edits 1000] [--no-check]

For each size, in fresh processes so each peak RSS (getrusage ru_maxrss) is that case's alone:

1. setup: write the previous snapshot (rows of 20 cells, streamed with write_rows);
2. measure: build the next snapshot from it plus ``--edits`` bodies (SetCell, a few SetRange, InsertRow and
   DeleteRow across the sheet), printing the peak RSS before and after the build, the time and throughput;
3. check (unless --no-check): read both snapshots back and compare with the fold of the edits.

The bucket is a directory of files (FileBlobStore below): InMemoryBlobStore would hold every object in the
process and measure the store, not the builder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from seglog_core.errors import BlobNotFoundError
from seglog_core.schema import Body, CellValue, DeleteRow, InsertRow, SetCell, SetRange

LOG = uuid.UUID("5e1f0c2a-7d3b-4a6e-9c8f-1b2d3e4f5a60")
COLS = 20
TARGET = 1.5
SEED = 11


class FileBlobStore:
    """The bucket as files under a directory: objects live on disk, not in the measured process."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None

    def is_discardable(self, key: str) -> bool:
        self.get(key)
        return False

    def keep(self, key: str) -> None:
        self.get(key)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def keys(self, prefix: str) -> Iterator[str]:
        found = (path.relative_to(self.root).as_posix() for path in self.root.rglob("*") if path.is_file())
        yield from sorted(key for key in found if key.startswith(prefix))


def value(row: int, col: int) -> CellValue:
    """A mix of the value types a sheet holds."""
    match col % 4:
        case 0:
            return row * col
        case 1:
            return row / 7
        case 2:
            return f"text {row}:{col}"
        case _:
            return row % 2 == 0


def sheet_rows(cells: int) -> Iterator[tuple[int, list[tuple[int, CellValue]]]]:
    for row in range(1, cells // COLS + 1):
        yield row, [(col, value(row, col)) for col in range(1, COLS + 1)]


def edits(cells: int, n: int) -> list[Body]:
    """``n`` bodies across the sheet: mostly SetCell, 1% inserts, 1% deletes, 1% small ranges."""
    rng = random.Random(SEED)
    rows = cells // COLS
    bodies: list[Body] = []
    for i in range(n):
        row = rng.randint(1, rows)
        if i % 100 == 10:
            bodies.append(InsertRow(after=row, values=["inserted", i]))
        elif i % 100 == 20:
            bodies.append(DeleteRow(row=row))
        elif i % 100 == 30:
            bodies.append(SetRange(row=row, col=1, values=[["r", i, 1.5], [None, "x"]]))
        else:
            bodies.append(SetCell(row=row, col=rng.randint(1, COLS + 5), value=rng.choice([i, "edit", None, 2.5])))
    return bodies


def reset_peak() -> None:
    """Forget the peak so far: a forked child starts with its parent's resident set counted in its peak
    (ru_maxrss includes the pages shared before exec), which hid the builder's own figure when the parent
    was a large process. Writing 5 to clear_refs resets VmHWM (Linux proc(5))."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_kb() -> int:
    """Peak resident set since the last reset, in kilobytes (VmHWM; ru_maxrss where /proc is absent)."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# ------------------------------------------------------------------------------------------ the three steps


def setup(directory: Path, cells: int) -> dict[str, object]:
    from seglog_core.snapshot import write_rows

    start = time.perf_counter()
    root = write_rows(FileBlobStore(directory), LOG, 0, 1, sheet_rows(cells))
    return {"previous": root, "seconds": time.perf_counter() - start}


def measure(directory: Path, cells: int, n_edits: int, previous: str) -> dict[str, object]:
    from seglog_core.snapshot import SnapshotBuild, load_root

    blobs = FileBlobStore(directory)
    bodies = edits(cells, n_edits)
    reset_peak()
    before = peak_kb()
    start = time.perf_counter()
    snapshot = SnapshotBuild(blobs, LOG, 0, 2, previous, bodies)
    written = 0
    chunks = 0
    for chunk in snapshot.chunks():
        blobs.put(chunk.key, chunk.data)
        written += len(chunk.data)
        chunks += 1
    key, data = snapshot.root()
    blobs.put(key, data)
    seconds = time.perf_counter() - start
    root = load_root(blobs, key)
    assert root is not None
    return {
        "root": key,
        "before_kb": before,
        "peak_kb": peak_kb(),
        "seconds": seconds,
        "cells": root.cells,
        "chunks": chunks,
        "bytes": written + len(data),
    }


def check(directory: Path, cells: int, n_edits: int, previous: str, root: str) -> dict[str, object]:
    from seglog_core.sheet import fold
    from seglog_core.snapshot import read_sheet

    blobs = FileBlobStore(directory)
    expected = fold(edits(cells, n_edits), read_sheet(blobs, previous))
    return {"equal": expected == read_sheet(blobs, root)}


def step(name: str, args: list[str]) -> dict[str, object]:
    """Run step ``name`` of one case with the arguments ``child`` passed."""
    directory, cells, rest = Path(args[0]), int(args[1]), args[2:]
    if name == "setup":
        return setup(directory, cells)
    if name == "measure":
        return measure(directory, cells, int(rest[0]), rest[1])
    return check(directory, cells, int(rest[0]), rest[1], rest[2])


def child(step: str, *args: str) -> dict[str, object]:
    """Run one step in a fresh interpreter; it prints its result as JSON."""
    out = subprocess.run(
        [sys.executable, __file__, "--step", step, *args], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def run_case(cells: int, n_edits: int, verify: bool) -> dict[str, object]:
    directory = Path(tempfile.mkdtemp(prefix="seglog-bench-snapshot-"))
    try:
        made = child("setup", str(directory), str(cells))
        previous = str(made["previous"])
        result = child("measure", str(directory), str(cells), str(n_edits), previous)
        if verify:
            result |= child("check", str(directory), str(cells), str(n_edits), previous, str(result["root"]))
        return result
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs=2, default=[10_000, 1_000_000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--no-check", action="store_true", help="skip comparing the result with the fold")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.step:
        print(json.dumps(step(options.step, options.args)))
        return

    print(f"# snapshot build peak RSS ({options.edits} edits over rows of {COLS} cells; "
          f"chunks of the default size; {os.cpu_count()} CPUs)")
    print(f"{'cells':>10} {'chunks':>7} {'baseline MB':>12} {'peak MB':>8} {'build +MB':>10} "
          f"{'build s':>8} {'cells/s':>11} {'MB/s out':>9} {'= fold':>7}")
    peaks: list[float] = []
    for cells in options.cells:
        r = run_case(cells, options.edits, not options.no_check)
        before, peak, seconds = int(str(r["before_kb"])) / 1024, int(str(r["peak_kb"])) / 1024, float(str(r["seconds"]))
        out_cells, out_bytes = int(str(r["cells"])), int(str(r["bytes"]))
        peaks.append(peak)
        print(f"{out_cells:>10,} {r['chunks']!s:>7} {before:>12.1f} {peak:>8.1f} {peak - before:>10.1f} "
              f"{seconds:>8.2f} {out_cells / seconds:>11,.0f} {out_bytes / seconds / 1e6:>9.1f} "
              f"{r.get('equal', '-')!s:>7}", flush=True)
    ratio = peaks[1] / peaks[0]
    print(f"peak RSS ratio {options.cells[1]:,} / {options.cells[0]:,} cells: {ratio:.2f} "
          f"(target <= {TARGET}: {'met' if ratio <= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()


def headlines(quick: bool) -> list[object]:
    """The summary line for ``python -m bench``: peak RSS of the two builds (each in fresh processes)."""
    from bench.support import Headline

    small, large = (10_000, 200_000) if quick else (10_000, 1_000_000)
    peaks = [int(str(run_case(cells, 1000, False)["peak_kb"])) / 1024 for cells in (small, large)]
    ratio = peaks[1] / peaks[0]
    return [Headline(name=f"snapshot build peak RSS {large:,} / {small:,} cells",
                     figure=f"{ratio:.2f} ({peaks[1]:.1f} MB vs {peaks[0]:.1f} MB)", target=f"<= {TARGET}",
                     met=ratio <= TARGET)]
