"""Shared pieces of the benchmarks: a local stack of their own, statistics, the entry body, headline figures.

Each benchmark starts its own stack on dedicated ports in a temporary run dir (a developer's `seglog up` stack
on 4566/8000 and the test session's on 4640/4650 are left alone) and stops it at the end. SEGLOG_BENCH_PORT_BASE
(default 4660) moves those ports, as SEGLOG_TEST_PORT_BASE moves the tests', so two checkouts can bench side by side.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog_aws.items import entry_to_item
from seglog_core import logs
from seglog_core.schema import Entry, SetCell, encode_body

if TYPE_CHECKING:
    from seglog_aws.backend import Backend
    from seglog_stack.local import LocalDeployment

# The stack manager and seglog's chaos tools are imported where they are used, not here: bench_contention's 32
# spawned writers import this module for the entry body and their Run, and those imports cost each of them about
# 0.6 s of CPU (of 1.8 s) on this 2-core machine, before the barrier that starts the clock.

#: (LocalStack port, DynamoDB Local port) per profile, used by the benchmarks only.
_BASE = int(os.environ.get("SEGLOG_BENCH_PORT_BASE", "4660"))
BENCH_PORTS = {"dynamodb-local": (_BASE, _BASE + 3400), "localstack": (_BASE + 10, _BASE + 3410)}
PROFILES = tuple(BENCH_PORTS)

#: The entry item size the append benchmarks aim for: near, and under, the 1 KB write unit.
ITEM_SIZE = 1000


# ------------------------------------------------------------------------------------------------ stack


@contextmanager
def local_backend(profile: str) -> Iterator[Backend]:
    """Start a provisioned stack of ``profile`` in a temporary run dir; stop it and remove the dir at the end."""
    from seglog_plugin.resources import backend_of

    with local_deployment(profile) as deployment:
        yield backend_of(deployment)


@contextmanager
def local_deployment(profile: str) -> Iterator[LocalDeployment]:
    """:func:`local_backend`'s stack, as its deployment: endpoints too, for benchmarks that provision more."""
    from seglog_stack import StackConfig, StackManager, local

    ls_port, ddb_port = BENCH_PORTS[profile]
    run_dir = Path(tempfile.mkdtemp(prefix=f"seglog-bench-{profile}-"))
    config = StackConfig.resolve(profile=profile, localstack_port=ls_port, dynamodb_port=ddb_port, run_dir=run_dir)
    started = time.monotonic()
    try:
        deployment = local.up(config, stack_name=f"bench{uuid.uuid4().hex[:8]}")
        print(f"# {profile} stack up in {time.monotonic() - started:.1f} s "
              f"(dynamodb {deployment.endpoints['dynamodb']})", flush=True)
        yield deployment
    finally:
        StackManager(config).down()
        shutil.rmtree(run_dir, ignore_errors=True)


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary directory for a benchmark's emulator logs: removed when the block ends normally, kept (and its
    place printed) when it raised."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    except BaseException:
        print(f"emulator logs kept in {work}")
        raise
    shutil.rmtree(work, ignore_errors=True)


def quiet_logs() -> None:
    """Warnings and errors only, on stderr: the library's debug lines would cost time and clutter the tables."""
    logs.configure(level=logging.WARNING)


# ------------------------------------------------------------------------------------------------ figures


@dataclass(frozen=True, kw_only=True)
class Headline:
    """One figure for the summary block: what was measured, against which target, and whether it met it."""

    name: str
    figure: str
    target: str
    met: bool | None  # None: context only, no target

    def line(self, profile: str | None = None) -> str:
        verdict = "" if self.met is None else " MET" if self.met else " MISSED"
        where = f"[{profile}] " if profile else ""
        return f"{where}{self.name}: {self.figure} (target: {self.target}){verdict}"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks (NaN for no values)."""
    from seglog_plugin.chaos.watch import percentile as chaos_percentile

    found = chaos_percentile(values, q)
    return math.nan if found is None else found


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


# ------------------------------------------------------------------------------------------------ items


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """The DynamoDB size of an item in bytes: names plus values (numbers: about 1 byte per 2 digits + 1)."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        ((kind, raw),) = value.items()
        if kind == "S":
            size += len(raw.encode())
        elif kind == "B":
            size += len(raw)
        elif kind == "N":
            size += math.ceil(len(raw.lstrip("-").replace(".", "").lstrip("0") or "0") / 2) + 1
        else:
            raise ValueError(f"item_size does not handle type {kind}")
    return size


def entry_item(log_id: uuid.UUID, num: int, body: SetCell, entry_id: uuid.UUID | None = None) -> dict[str, Any]:
    """The item an append of ``body`` at ``num`` writes (the same attributes EventLog.append sets)."""
    return entry_to_item(Entry(log_id=log_id, segment=0, num=num, created=int(time.time()), type=body.TYPE,
                               version=body.VERSION, body=encode_body(body), entry_id=entry_id or uuid.uuid4()))


def sized_body(target: int = ITEM_SIZE) -> SetCell:
    """A SetCell whose entry item (at a 4-digit num) is ``target`` bytes, or just under."""
    pad = 0
    for _ in range(8):
        body = SetCell(row=1, col=1, value="x" * pad)
        size = item_size(entry_item(uuid.uuid4(), 1000, body))
        if size == target:
            break
        pad = max(0, pad + target - size)
    while item_size(entry_item(uuid.uuid4(), 1000, body)) > target:
        pad -= 1
        body = SetCell(row=1, col=1, value="x" * pad)
    return body


# ------------------------------------------------------------------------------------------------ running


def options(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--profile", choices=(*PROFILES, "both"), default="dynamodb-local",
                        help="which local stack to run against (default dynamodb-local)")
    parser.add_argument("--quick", action="store_true", help="a small, fast run (CI checks that it still runs)")
    return parser


def profiles(choice: str) -> tuple[str, ...]:
    return PROFILES if choice == "both" else (choice,)


def standalone(description: str, run: Callable[[Backend, bool], list[Headline]]) -> None:
    """``python -m bench.<module>``: run one benchmark on each chosen profile and print its headlines."""
    from seglog_plugin.resources import backend_of

    deployed(description, lambda deployment, quick: run(backend_of(deployment), quick))


def deployed(description: str, run: Callable[[LocalDeployment, bool], list[Headline]]) -> None:
    """:func:`standalone` for a benchmark that runs the emulator: ``run`` gets each chosen profile's bench stack
    (its endpoints too, to provision resources of its own)."""
    args = options(description).parse_args()
    quiet_logs()
    summary: list[str] = []
    for profile in profiles(args.profile):
        with local_deployment(profile) as deployment:
            summary += [h.line(profile) for h in run(deployment, args.quick)]
    print("\n" + "\n".join(summary))
