"""A handler that is not seglog's runs as on Lambda (issue 36, point 2): its artifact holds only its own file, the
SDK comes from the runtime (boto3 and botocore are on the path after the artifact, as Lambda's Python runtime
includes them), the worker wrapper loads nothing of seglog's and no logging library into its process, and what the
handler writes reaches the emulator's log and metrics through the invoker's tap on its standard error.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from seglog_emulator import metrics, sandbox
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker, Outcome

PLAIN_APP = Path(__file__).resolve().parent / "plain_app"


def test_a_plain_handler_gets_the_sdk_and_nothing_of_seglog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_directory", tmp_path / "metrics")
    (tmp_path / "metrics").mkdir()
    log_path = tmp_path / "worker.log"
    spec = FunctionSpec(logical_id="OrdersFunction", Handler="orders.handler")
    with open(log_path, "wb") as log, LambdaInvoker(spec, code=[PLAIN_APP], stderr=log) as invoker:
        result = invoker.invoke({"order": "o-1"})
        written = log_path.read_text()  # before close: invoke returns once the tap copied the invocation's lines

    assert Outcome.SUCCESS == result.outcome, result.error_message
    assert Path(result.payload["boto3"]).is_relative_to(sandbox.sdk_dir())
    assert {"structlog": True, "seglog_core": True, "seglog_aws": True, "seglog_services": True,
            "yaml": True} == result.payload["absent"]
    assert [] == result.payload["loaded"]
    # The standard library's log as Lambda's runtime writes it: level, time, request id, message.
    [line] = [line for line in written.splitlines() if line.startswith("[INFO]")]
    level, _when, request_id, message = line.split("\t")
    assert ("[INFO]", result.request_id, "order o-1 received") == (level, request_id, message)
    assert result.request_id == result.payload["request_id"]
    # The printed embedded-metric-format line is copied, and stands for its datapoint.
    assert '"Received": 1' in written
    points = list(metrics.MetricFiles(tmp_path / "metrics").new_points())
    assert [("Orders", "Received", {"Service": "orders"}, 1.0)] == [(p["ns"], p["m"], p["d"], p["v"]) for p in points]


def test_an_artifact_s_own_sdk_comes_before_the_runtime_s(tmp_path: Path) -> None:
    """As on Lambda, a boto3 in the artifact wins over the runtime's (the artifact is first on the path)."""
    (tmp_path / "boto3").mkdir()
    (tmp_path / "boto3" / "__init__.py").write_text("__version__ = 'artifact'\n")
    (tmp_path / "which.py").write_text("import boto3\n\ndef handler(event, context):\n    return boto3.__version__\n")
    spec = FunctionSpec(logical_id="WhichFunction", Handler="which.handler")
    with LambdaInvoker(spec, code=[tmp_path], stderr=subprocess.DEVNULL) as invoker:
        result = invoker.invoke({})
    assert (Outcome.SUCCESS, "artifact") == (result.outcome, result.payload)


def test_crash_points_without_an_invocation_hook_are_refused() -> None:
    spec = FunctionSpec(logical_id="OrdersFunction", Handler="orders.handler")
    with (LambdaInvoker(spec, code=[PLAIN_APP], stderr=subprocess.DEVNULL) as invoker,
          pytest.raises(ValueError, match="invocation hook")):
        invoker.invoke({"order": "o-2"}, crash_points=["after_claim"])


def test_a_clock_skew_without_a_hook_runs_the_time_module_ahead_for_that_invocation_only(tmp_path: Path) -> None:
    """clock_skew for any app (issue 37, point 1): with no invocation hook, the worker runs ``time.time()`` and
    ``time.time_ns()`` ahead for the skewed invocation; the next one, in the same warm worker, reads the true clock,
    and the handler's remaining time is the deadline's, not the skewed clock's."""
    (tmp_path / "clock.py").write_text(
        "import time\n\ndef handler(event, context):\n"
        "    return {'time': time.time(), 'ns': time.time_ns(), 'left': context.get_remaining_time_in_millis()}\n")
    spec = FunctionSpec(logical_id="ClockFunction", Handler="clock.handler", Timeout=30)
    with LambdaInvoker(spec, code=[tmp_path], stderr=subprocess.DEVNULL) as invoker:
        before = time.time()
        skewed = invoker.invoke({}, clock_skew=6.5)
        real = invoker.invoke({})
        after = time.time()
    assert skewed.pid == real.pid
    assert before + 6.5 <= skewed.payload["time"] <= after + 6.5
    assert abs(skewed.payload["ns"] / 1e9 - skewed.payload["time"]) < 1
    assert before <= real.payload["time"] <= after
    assert skewed.payload["left"] > 25_000  # not cut by the skew


def test_a_runtime_other_than_this_interpreter_runs_here_with_a_warning() -> None:
    """python3.12 is not what workers run (this interpreter is): the function runs on it, and the log says so."""
    spec = FunctionSpec(logical_id="OrdersFunction", Handler="orders.handler", Runtime="python3.12")
    with capture_logs() as logs, LambdaInvoker(spec, code=[PLAIN_APP], stderr=subprocess.DEVNULL) as invoker:
        result = invoker.invoke({"order": "o-3"})
    assert Outcome.SUCCESS == result.outcome, result.error_message
    [warning] = [line for line in logs if line["event"].startswith("runtime not installed here")]
    assert ("python3.12", "OrdersFunction") == (warning["runtime"], warning["function"])


def test_a_worker_whose_invoker_dies_finishes_and_keeps_its_lines(tmp_path: Path) -> None:
    """A poller restart or a killed child leaves its workers running, as Lambda lets an invocation finish when the
    service loses its connection: the worker's lines then go to the invoker's own destination, and the handler
    never sees the broken pipe of the log tap that died with its invoker."""
    log_path = tmp_path / "invoker.log"
    script = f"""
import os, threading, time
from pathlib import Path
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker
spec = FunctionSpec(logical_id="OrdersFunction", Handler="orders.slow_print", Timeout=10)
invoker = LambdaInvoker(spec, code=[Path({str(PLAIN_APP)!r})])
threading.Thread(target=invoker.invoke, args=({{"seconds": 1.5}},), daemon=True).start()
while not invoker.workers() or not invoker.workers()[0].request_id:  # past its Init, the event sent
    time.sleep(0.05)
time.sleep(0.5)  # the handler is asleep in its 1.5 s
print("worker", invoker.workers()[0].pid, flush=True)
os._exit(0)
"""
    with open(log_path, "wb") as log:
        done = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=log, text=True,
                              timeout=60, check=True)
    pid = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
    written = log_path.read_text()
    assert "printed after the invoker died" in written, written
    assert "logged after the invoker died" in written
    assert "BrokenPipeError" not in written


@pytest.mark.parametrize(("level", "shown"), [("INFO", ["info 3", "failed"]),
                                              ("DEBUG", ["debug 3", "info 3", "failed"]), ("ERROR", ["failed"])])
def test_logging_config_json_writes_lambdas_json_lines_at_the_application_level(
        tmp_path: Path, level: str, shown: list[str]) -> None:
    spec = FunctionSpec(logical_id="ChattyFunction", Handler="chatty.handler", LogFormat="JSON",
                        ApplicationLogLevel=level)
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log, LambdaInvoker(spec, code=[PLAIN_APP], stderr=log) as invoker:
        result = invoker.invoke({"n": 3})
        written = log_path.read_text()

    lines = [json.loads(line) for line in written.splitlines() if line.startswith('{"timestamp"')]
    assert shown == [line["message"] for line in lines]
    info = next((line for line in lines if line["message"] == "info 3"), None)
    if info is not None:
        assert {"level": "INFO", "logger": "chatty", "requestId": result.request_id, "order": "o-1"} == {
            k: info[k] for k in ("level", "logger", "requestId", "order")}
        assert info["timestamp"].endswith("Z") and len(info["timestamp"]) == len("2026-11-29T06:00:00.000Z")
    [failed] = [line for line in lines if line["message"] == "failed"]
    assert ("ERROR", "ValueError", "no stock") == (failed["level"], failed["errorType"], failed["errorMessage"])
    assert failed["stackTrace"] and failed["location"].endswith("chatty.py:handler:15")  # where it was logged


@pytest.mark.parametrize("event", [[1, {"k": "v"}], "text", 7, None])
def test_any_json_value_is_an_event(event: object) -> None:
    """Lambda takes any JSON document as the payload (an array, a string, a number, null), not only objects:
    lambda.invoke of a list crashed the invoker before (found on aws-samples' lambda-s3-async-lambda)."""
    spec = FunctionSpec(logical_id="EchoFunction", Handler="orders.echo")
    with LambdaInvoker(spec, code=[PLAIN_APP]) as invoker:
        result = invoker.invoke(event)
    assert (Outcome.SUCCESS, event) == (result.outcome, result.payload)
