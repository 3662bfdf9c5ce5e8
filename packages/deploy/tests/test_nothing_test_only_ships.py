"""Nothing test-only is reachable in production (DESIGN §10.4, issue 10 point 7): the artifact that deploys, run
as Lambda runs it — its own tree and the standard library, no emulator wrapper — with every variable that ever
armed crash points, clock skew or fault injection set in its configuration, arms none of them."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS

#: What the emulator has used to arm test-only behaviour; a deployed function's configuration could set any.
ARMING_VARIABLES = ("SEGLOG_CRASH_POINTS", "SEGLOG_CLOCK_SKEW_SECONDS", "SEGLOG_FAULT_PLAN", "SEGLOG_FAULT_DIR")
HANDLERS = ("seglog_services.api", "seglog_services.stream_router", "seglog_services.snapshot_worker",
            "seglog_services.retention")
#: Imports every handler's module as Lambda's Init does, then walks every crash point (an armed one would kill
#: the process with SIGKILL) and reports what is armed, the clock's skew, and whether fault hooks exist.
PROBE = """
import importlib, json, sys, time
for name in sys.argv[2:]:
    importlib.import_module(name)
from seglog_core import crashpoints
points = json.loads(sys.argv[1])
for point in points:
    crashpoints.should_crash(point)
try:
    import seglog_emulator
    hooks = True
except ImportError:
    hooks = False
print(json.dumps({"armed": sorted(crashpoints.armed()), "skew": crashpoints.clock() - time.time(),
                  "fault_hooks": hooks, "walked": len(points)}))
"""


def test_a_deployed_configuration_arms_no_crash_point_skew_or_fault(lambda_code: Path, tmp_path: Path) -> None:
    points = [*WORKER_CRASH_POINTS, ROUTER_AFTER_SEND]
    plan = {"seed": 1, "rate": 1.0, "faults": {"worker_crash": 1.0, "ddb_throttle": 1.0, "clock_skew": 1.0}}
    configuration = {"SEGLOG_CRASH_POINTS": ",".join(points), "SEGLOG_CLOCK_SKEW_SECONDS": "30",
                     "SEGLOG_FAULT_PLAN": json.dumps(plan), "SEGLOG_FAULT_DIR": str(tmp_path / "faults"),
                     "AWS_REGION": "us-east-1", "PATH": os.environ.get("PATH", "")}
    assert set(ARMING_VARIABLES) <= set(configuration)
    code = f"import sys; sys.path[0:0] = [{str(lambda_code)!r}]\n{PROBE}"

    done = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", code, json.dumps(points), *HANDLERS],
                          env=configuration, capture_output=True, text=True, timeout=120, check=False)

    assert 0 == done.returncode, done.stderr[-2000:]  # -9 had a crash point fired
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"armed": [], "fault_hooks": False, "walked": len(points)} == {k: found[k] for k in
                                                                          ("armed", "fault_hooks", "walked")}
    assert abs(found["skew"]) < 1.0
    assert not (tmp_path / "faults").exists()


def test_no_shipped_module_reads_an_arming_variable(lambda_code: Path) -> None:
    """The static side of the same rule: no string naming a crash point, fault or skew variable appears in any
    seglog module the artifact carries."""
    readers = []
    for path in sorted(lambda_code.glob("seglog_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                    word in node.value for word in ("SEGLOG_CRASH", "SEGLOG_FAULT", "CLOCK_SKEW")):
                readers.append(f"{path.relative_to(lambda_code)}:{node.lineno}: {node.value!r}")
    assert [] == readers
