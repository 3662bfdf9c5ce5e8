"""Cold starts of each function from its built artifact: the Init Duration (process start + handler import, as
Lambda's REPORT line gives it), with the .pyc files the build ships and without them.

Run: uv run --no-sync python -m bench.bench_cold_start [--runs N]

Lambda cannot write __pycache__ under /var/task, so without shipped bytecode every cold start compiles every
module it imports; the emulator's workers run with -B for the same reason, so this measures what Lambda pays
(on this machine's CPU, which is not Lambda's: compare the two columns, not the figures with AWS's).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from seglog_core import logs
from seglog_deploy.build import Builder, host_arch
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker

#: Placeholders for the variables the template gives every function: Init reads no table, but a handler module
#: may read its configuration at import.
ENVIRONMENT = {"SEGLOG_SEGMENTS_TABLE": "s", "SEGLOG_ENTRIES_TABLE": "e", "SEGLOG_PENDING_TABLE": "p",
               "SEGLOG_BUCKET": "b", "SEGLOG_QUEUE_URL": "http://127.0.0.1:9/q", "AWS_REGION": "us-east-1"}


def init_durations(code: Path, handler: str, runs: int) -> list[float]:
    """Init Duration (ms) of ``runs`` cold starts of ``handler``; each invocation's event is empty, so the
    handler's own answer (an error, most likely) does not matter."""
    spec = FunctionSpec(logical_id=handler.split(".")[1], Handler=handler, Timeout=30, Environment=ENVIRONMENT)
    found = []
    for _ in range(runs):
        with LambdaInvoker(spec, code=[code], stderr=subprocess.DEVNULL) as invoker:
            result = invoker.invoke({})
        if result.error_type and result.error_type.startswith("Runtime.Import"):
            raise SystemExit(f"{handler}: {result.error_message}")
        assert result.init_duration_ms is not None
        found.append(result.init_duration_ms)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logs.configure(level=logging.ERROR)  # the invocations' own lines (errors: the events are empty) stay out
    arch = host_arch()
    with tempfile.TemporaryDirectory() as scratch:
        plain = Builder(arch=arch, bytecode=False, out=Path(scratch)).build()
        compiled = Builder(arch=arch).build()
        print(f"## cold start, Init Duration in ms (median of {args.runs}, min-max), {arch} twin, "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'function':<24} {'with .pyc':>22} {'without .pyc':>22}")
        for name, function in compiled.functions.items():
            cells = []
            for manifest in (compiled, plain):
                runs = init_durations(manifest.artifact_of(name).code, function.handler, args.runs)
                cells.append(f"{statistics.median(runs):7.0f} ({min(runs):.0f}-{max(runs):.0f})")
            print(f"{name:<24} {cells[0]:>22} {cells[1]:>22}")


if __name__ == "__main__":
    main()
