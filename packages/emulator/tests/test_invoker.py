"""LambdaInvoker runs handlers in real worker processes the way Lambda runs them in execution environments.

AWS Lambda Developer Guide pages: lambda-runtime-environment (Init, Invoke, reuse, timeouts), python-context,
python-exceptions, configuration-envvars, configuration-concurrency. The handlers live in handlers/, the first
of the workers' code directories, before the unpacked artifact (``lambda_code``) that holds what the worker
wrapper imports (seglog_core, structlog, botocore).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from seglog_emulator.faults import ERROR_CODES, FaultKind, FaultPlan
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.invoker import (
    FunctionSpec,
    InvocationResult,
    InvokerClosedError,
    LambdaInvoker,
    Outcome,
)

HANDLERS = Path(__file__).resolve().parent / "handlers"

MakeInvoker = Callable[..., LambdaInvoker]


@pytest.fixture
def make_invoker(lambda_code: Path) -> Iterator[MakeInvoker]:
    """Builds invokers of handlers in handlers/invoker_probe.py and closes them after the test."""
    invokers: list[LambdaInvoker] = []

    def make(function: str, *, timeout: float = 5.0, concurrency: int = 1, memory_size: int = 128,
             environment: dict[str, str] | None = None) -> LambdaInvoker:
        spec = FunctionSpec(logical_id=f"probe-{function}", Handler=f"invoker_probe.{function}", Timeout=timeout,
                            MemorySize=memory_size, Environment=environment or {})
        invoker = LambdaInvoker(spec, code=[HANDLERS, lambda_code], concurrency=concurrency,
                                invocation_hook="seglog_core.crashpoints")
        invokers.append(invoker)
        return invoker

    yield make
    for invoker in invokers:
        invoker.close(grace=0)


def in_background(invoker: LambdaInvoker, event: dict[str, Any], **kwargs: Any) -> tuple[threading.Thread, list[
        InvocationResult]]:
    results: list[InvocationResult] = []
    thread = threading.Thread(target=lambda: results.append(invoker.invoke(event, **kwargs)))
    thread.start()
    return thread, results


def busy_pid(invoker: LambdaInvoker, within: float = 5.0) -> int:
    """The pid of the worker running an invocation, once there is one."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        busy = [w.pid for w in invoker.workers() if w.busy and w.request_id]
        if busy:
            return busy[0]
        time.sleep(0.01)
    raise AssertionError(f"no busy worker within {within} s")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------------------------------------------ outcomes


def test_invocation_returns_the_handlers_json_value(make_invoker: MakeInvoker) -> None:
    """The handler's return value comes back JSON-decoded, under a fresh uuid request id."""
    result = make_invoker("echo").invoke({"Records": [{"n": 1}]})

    assert Outcome.SUCCESS == result.outcome
    assert {"Records": [{"n": 1}]} == result.payload["event"]
    assert result.pid == result.payload["pid"] != os.getpid()
    assert str(uuid.UUID(result.request_id)) == result.request_id
    assert result.cold_start and result.init_duration_ms is not None


def test_handler_exception_is_a_function_error_and_keeps_the_environment(make_invoker: MakeInvoker) -> None:
    """An exception from the handler gives errorType/errorMessage/stackTrace (python-exceptions); the
    execution environment survives it and serves the next invocation warm."""
    invoker = make_invoker("fail")

    first = invoker.invoke({"id": 7})
    second = invoker.invoke({"id": 8})

    assert (Outcome.ERROR, "ValueError", "bad record 7") == (first.outcome, first.error_type, first.error_message)
    assert "in fail" in first.stack_trace[-1]
    assert (first.pid, False) == (second.pid, second.cold_start)


@pytest.mark.parametrize(("function", "error_type"), [
    ("no_such_function", "Runtime.HandlerNotFound"),
    ("not_json", "Runtime.MarshalError"),
])
def test_runtime_errors_carry_lambdas_error_types(make_invoker: MakeInvoker, function: str, error_type: str) -> None:
    """A handler missing from its module, or a return value that is not JSON, fails as Lambda reports it."""
    result = make_invoker(function).invoke({})

    assert (Outcome.ERROR, error_type) == (result.outcome, result.error_type)


def test_unimportable_module_is_an_init_error(lambda_code: Path) -> None:
    """A module that cannot be imported fails the invocation with Runtime.ImportModuleError."""
    spec = FunctionSpec(logical_id="missing", Handler="no_such_module_xyz.handler")
    with LambdaInvoker(spec, code=[lambda_code]) as invoker:
        result = invoker.invoke({})

    assert (Outcome.ERROR, "Runtime.ImportModuleError") == (result.outcome, result.error_type)
    assert "no_such_module_xyz" in (result.error_message or "")


def test_function_timeout_kills_the_invocation_and_the_next_one_starts_cold(make_invoker: MakeInvoker) -> None:
    """Past its timeout an invocation is stopped and counts as failed (lambda-runtime-environment); the
    environment is not reused, so the next invocation is a cold start in a new process."""
    invoker = make_invoker("sleep", timeout=1.0)

    timed_out = invoker.invoke({"seconds": 5})
    after = invoker.invoke({"seconds": 0})

    assert (Outcome.TIMEOUT, "Task timed out after 1.00 seconds") == (timed_out.outcome, timed_out.error_message)
    assert 1000 <= timed_out.duration_ms < 1900
    assert not pid_alive(timed_out.pid)
    assert (Outcome.SUCCESS, True) == (after.outcome, after.cold_start)
    assert after.pid != timed_out.pid


@pytest.mark.parametrize("killer", ["kill -9 from outside", "LambdaInvoker.kill"])
def test_worker_killed_mid_invocation_crashes_it(make_invoker: MakeInvoker, killer: str) -> None:
    """kill -9 of the process running an invocation ends it crashed; the next one gets a new worker."""
    invoker = make_invoker("sleep", timeout=10.0)
    thread, results = in_background(invoker, {"seconds": 5})
    pid = busy_pid(invoker)

    if killer == "LambdaInvoker.kill":
        invoker.kill(pid)
    else:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=5)
    after = invoker.invoke({"seconds": 0})

    [crashed] = results
    assert (Outcome.CRASHED, pid) == (crashed.outcome, crashed.pid)
    assert crashed.error_message is not None and crashed.error_message.endswith("signal: killed")
    assert crashed.duration_ms < 4000
    assert (Outcome.SUCCESS, True) == (after.outcome, after.cold_start)
    assert pid != after.pid


@pytest.mark.parametrize(("function", "status"), [
    ("exit_process", "exit status 3"),
    ("segfault", "signal: segmentation fault"),
])
def test_handler_ending_the_process_crashes_the_invocation(make_invoker: MakeInvoker, function: str,
                                                           status: str) -> None:
    """os._exit or a segfault in a handler ends the environment: Runtime.ExitError with how it ended."""
    result = make_invoker(function).invoke({})

    assert (Outcome.CRASHED, "Runtime.ExitError") == (result.outcome, result.error_type)
    assert result.error_message is not None and result.error_message.endswith(status)


def test_handler_output_goes_to_the_log_not_the_protocol(make_invoker: MakeInvoker) -> None:
    """A handler may print and read stdin (empty, as on Lambda) without disturbing its invocation."""
    invoker = make_invoker("noisy")

    results = [invoker.invoke({}) for _ in range(2)]

    assert [(Outcome.SUCCESS, "stdin gave ''")] * 2 == [(r.outcome, r.payload) for r in results]


def test_idle_worker_killed_gives_a_cold_start_not_a_failure(make_invoker: MakeInvoker) -> None:
    """A worker killed between invocations is replaced on the next invocation, which runs normally."""
    invoker = make_invoker("echo")
    first = invoker.invoke({})
    invoker.kill(first.pid)

    after = invoker.invoke({})

    assert (Outcome.SUCCESS, True, 1) == (after.outcome, after.cold_start, after.payload["invocations"])


# ------------------------------------------------------------------------------------------------ crash points


def test_armed_crash_point_kills_the_worker_at_that_point(make_invoker: MakeInvoker) -> None:
    """An invocation armed with a named crash point dies there (SIGKILL, nothing after it runs); points are
    armed for that invocation only, so the next invocation runs every step."""
    invoker = make_invoker("steps")
    steps = {"steps": ["after_pending_upsert", "after_claim", "mid_chunk"]}

    unhit = invoker.invoke(steps, crash_points={"before_delete_message"})
    crashed = invoker.invoke(steps, crash_points={"after_claim"})
    after = invoker.invoke(steps)

    assert (Outcome.SUCCESS, steps["steps"]) == (unhit.outcome, unhit.payload)
    assert (Outcome.CRASHED, unhit.pid) == (crashed.outcome, crashed.pid)
    assert (Outcome.SUCCESS, steps["steps"], True) == (after.outcome, after.payload, after.cold_start)


def test_no_environment_variable_arms_a_crash_point(make_invoker: MakeInvoker) -> None:
    """DESIGN §10.4: crash points are armed in-process by the worker wrapper only. A function configured with
    the variables that used to arm them (as a deployed function could be) walks every step, and an armed
    invocation leaves no trace in the environment its handler reads."""
    names = {"names": ["SEGLOG_CRASH_POINTS", "SEGLOG_CLOCK_SKEW_SECONDS"]}
    steps = {"steps": ["after_claim", "mid_chunk"]}
    configured = make_invoker("steps", environment={"SEGLOG_CRASH_POINTS": "after_claim,mid_chunk",
                                                     "SEGLOG_CLOCK_SKEW_SECONDS": "30"})
    walked = configured.invoke(steps)
    assert (Outcome.SUCCESS, steps["steps"]) == (walked.outcome, walked.payload)

    probe = make_invoker("environment")
    armed = probe.invoke(names, crash_points={"mid_chunk"}, clock_skew=5.0)
    assert {"SEGLOG_CRASH_POINTS": None, "SEGLOG_CLOCK_SKEW_SECONDS": None} == armed.payload["env"]


def test_a_clock_skew_runs_the_services_clock_ahead_for_that_invocation_only(make_invoker: MakeInvoker) -> None:
    """clock_skew: seglog_core.crashpoints.clock, which the snapshot worker stamps claims with, runs the given
    seconds ahead in that invocation; the next one, in the same warm worker, has the real clock again."""
    invoker = make_invoker("clock_ahead")
    skewed = invoker.invoke({}, clock_skew=6.5)
    real = invoker.invoke({})
    assert skewed.pid == real.pid
    assert 6.4 < skewed.payload < 6.6
    assert abs(real.payload) < 0.1


def test_another_code_version_s_environment_holds_for_that_invocation_only(make_invoker: MakeInvoker) -> None:
    """mixed_version: an invocation given ``environment`` sees it over the function's own variables (the
    snapshot worker reads SEGLOG_CHUNK_CELLS per invocation); the next one, in the same warm worker, sees
    the function's value again, and a variable the function does not set is gone again. If this failed, one
    mixed_version decision would leak into every later build of that worker."""
    invoker = make_invoker("environment", environment={"SEGLOG_CHUNK_CELLS": "20000"})
    names = {"names": ["SEGLOG_CHUNK_CELLS", "SEGLOG_ONLY_IN_VERSION_B"]}

    other = invoker.invoke(names, environment={"SEGLOG_CHUNK_CELLS": "7", "SEGLOG_ONLY_IN_VERSION_B": "b"})
    own = invoker.invoke(names)

    assert other.pid == own.pid
    assert {"SEGLOG_CHUNK_CELLS": "7", "SEGLOG_ONLY_IN_VERSION_B": "b"} == other.payload["env"]
    assert {"SEGLOG_CHUNK_CELLS": "20000", "SEGLOG_ONLY_IN_VERSION_B": None} == own.payload["env"]


# ------------------------------------------------------------------------------------------------ environment


def test_worker_environment_is_the_functions_and_lambdas_not_the_invokers(
        make_invoker: MakeInvoker, monkeypatch: pytest.MonkeyPatch, lambda_code: Path) -> None:
    """The worker's environment is the function's variables, Lambda's reserved ones over them
    (configuration-envvars) and the SDK's endpoint and credential variables; nothing else of the invoker's
    environment reaches the handler. The context describes the function and the invocation (python-context)."""
    monkeypatch.setenv("SEGLOG_FROM_PARENT", "parent")
    monkeypatch.setenv("SEGLOG_TABLE", "parent-table")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:4566")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    invoker = make_invoker("environment", memory_size=256, environment={
        "SEGLOG_TABLE": "entries", "AWS_ENDPOINT_URL": "http://localhost:4566", "AWS_REGION": "eu-west-1",
        "AWS_LAMBDA_FUNCTION_NAME": "not-reserved-for-the-function"})

    result = invoker.invoke({"names": [
        "SEGLOG_FROM_PARENT", "SEGLOG_TABLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
        "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "_HANDLER", "AWS_EXECUTION_ENV",
        "LAMBDA_TASK_ROOT", "TZ", "VIRTUAL_ENV"]})

    assert {"SEGLOG_FROM_PARENT": None, "SEGLOG_TABLE": "entries", "AWS_ENDPOINT_URL": "http://localhost:4566",
            "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:4566", "AWS_ACCESS_KEY_ID": "test-key",
            "AWS_LAMBDA_FUNCTION_NAME": "probe-environment", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "_HANDLER": "invoker_probe.environment", "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
            "LAMBDA_TASK_ROOT": str(HANDLERS), "TZ": ":UTC", "VIRTUAL_ENV": None} == result.payload["env"]
    context = result.payload["context"]
    assert {"function_name": "probe-environment", "function_version": "$LATEST",
            "invoked_function_arn": "arn:aws:lambda:eu-west-1:000000000000:function:probe-environment",
            "memory_limit_in_mb": "256", "aws_request_id": result.request_id,
            "log_group_name": "/aws/lambda/probe-environment"} == {k: v for k, v in context.items()
                                                                   if k != "log_stream_name"}
    assert "[$LATEST]" in context["log_stream_name"]


def test_the_fault_plan_reaches_the_wrapper_but_never_the_handler(
        make_invoker: MakeInvoker, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Emulator-only settings travel to the worker wrapper in its environment and are removed before the handler
    is imported (DESIGN §10.4): the handler reads none of them, and the wrapper still injects the plan's faults
    (its fault log names the worker's process)."""
    plan = FaultPlan.from_flags("ddb_throttle=1.0", rate=1.0, seed=3)
    runtime = FaultRuntime(plan, tmp_path / "faults")
    for name, value in runtime.env().items():
        monkeypatch.setenv(name, value)
    invoker = make_invoker("environment_and_dynamodb_call")

    result = invoker.invoke({"names": sorted(runtime.env())})

    assert dict.fromkeys(runtime.env()) == result.payload["env"]
    [fault] = runtime.injected()
    assert ("ddb_throttle", result.pid) == (fault["kind"], fault["pid"])
    assert result.payload["error_code"] in {code for code, _ in ERROR_CODES[FaultKind.DDB_THROTTLE]}


def test_a_fault_plan_in_the_functions_configuration_arms_nothing(make_invoker: MakeInvoker, tmp_path: Path) -> None:
    """Only the emulator hands the wrapper a fault plan: a function configured with the same variables (in the
    template, as a deployed function could be) gets no fault injected, and its handler does not see them."""
    runtime = FaultRuntime(FaultPlan.from_flags("ddb_throttle=1.0", rate=1.0, seed=3), tmp_path / "faults")
    invoker = make_invoker("environment_and_dynamodb_call", environment=runtime.env())

    result = invoker.invoke({"names": sorted(runtime.env())})

    assert (dict.fromkeys(runtime.env()), "no fault: the call went out") == (result.payload["env"],
                                                                             result.payload["error_code"])
    assert [] == runtime.injected()


def test_remaining_time_counts_down_from_the_timeout(make_invoker: MakeInvoker) -> None:
    """context.get_remaining_time_in_millis starts near the timeout and decreases as the handler runs."""
    result = make_invoker("sleep", timeout=3.0).invoke({"seconds": 0.3})

    before, after = result.payload["before"], result.payload["after"]
    assert 2500 < before <= 3000
    assert 250 <= before - after < 1000


# ------------------------------------------------------------------------------------------------ reuse, concurrency


def test_warm_invocations_reuse_the_process_and_its_module(make_invoker: MakeInvoker) -> None:
    """Lambda reuses an execution environment: same process, module globals kept, only the first is cold."""
    invoker = make_invoker("echo")

    results = [invoker.invoke({}) for _ in range(3)]

    assert [(results[0].pid, n) for n in (1, 2, 3)] == [(r.pid, r.payload["invocations"]) for r in results]
    assert [True, False, False] == [r.cold_start for r in results]
    assert [r.init_duration_ms is not None for r in results] == [True, False, False]


def test_concurrency_two_runs_two_slow_invocations_in_parallel(make_invoker: MakeInvoker) -> None:
    """With concurrency 2, two invocations run at once in two environments."""
    invoker = make_invoker("sleep", concurrency=2)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: invoker.invoke({"seconds": 1.0}), range(2)))

    assert [Outcome.SUCCESS] * 2 == [r.outcome for r in results]
    assert 2 == len({r.pid for r in results})
    # The handlers' own clocks show the two runs overlapping (cold starts on a loaded machine vary too much
    # for a wall-clock bound on the pair).
    first, second = sorted((r.payload["started"], r.payload["ended"]) for r in results)
    assert second[0] < first[1]


def test_concurrency_limits_invocations_at_once(make_invoker: MakeInvoker) -> None:
    """A third invocation waits for a free slot (configuration-concurrency) and reuses a warm worker."""
    invoker = make_invoker("sleep", concurrency=2)

    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: invoker.invoke({"seconds": 0.5}), range(3)))
    elapsed = time.monotonic() - started

    assert 2 == len({r.pid for r in results})
    assert [False, True, True] == sorted(r.cold_start for r in results)
    assert elapsed >= 1.0


# ------------------------------------------------------------------------------------------------ logs, close


def test_one_log_line_per_invocation(make_invoker: MakeInvoker) -> None:
    """Each invocation logs one line with the ids and figures a reader needs (STYLE "Logging")."""
    invoker = make_invoker("echo")

    with capture_logs() as logs:
        result = invoker.invoke({"Records": [{}, {}]}, attempt=2, source="EntriesStreamMapping")

    [line] = [entry for entry in logs if entry["event"] == "invocation"]
    assert {"function": "probe-echo", "request_id": result.request_id, "source": "EntriesStreamMapping",
            "batch_size": 2, "attempt": 2, "outcome": "success", "pid": result.pid, "cold_start": True,
            } == {k: line[k] for k in ("function", "request_id", "source", "batch_size", "attempt", "outcome",
                                       "pid", "cold_start")}
    assert line["duration_ms"] >= 0


def test_close_drains_invocations_in_flight_then_stops_workers(make_invoker: MakeInvoker) -> None:
    """close waits for the invocation in flight, stops every worker, and refuses new invocations."""
    invoker = make_invoker("sleep")
    invoker.invoke({"seconds": 0})
    thread, results = in_background(invoker, {"seconds": 0.5})
    pid = busy_pid(invoker)

    invoker.close(grace=5.0)
    thread.join(timeout=5)

    assert [Outcome.SUCCESS] == [r.outcome for r in results]
    assert ([], False) == (invoker.workers(), pid_alive(pid))
    with pytest.raises(InvokerClosedError):
        invoker.invoke({"seconds": 0})


def test_close_kills_invocations_still_running_after_the_grace_period(make_invoker: MakeInvoker) -> None:
    invoker = make_invoker("sleep", timeout=10.0)
    thread, results = in_background(invoker, {"seconds": 5})
    busy_pid(invoker)

    started = time.monotonic()
    invoker.close(grace=0.2)
    thread.join(timeout=5)

    assert [Outcome.CRASHED] == [r.outcome for r in results]
    assert time.monotonic() - started < 3


def test_each_invocation_reports_its_cpu_time_and_the_workers_peak_memory(make_invoker: MakeInvoker) -> None:
    """What bench_memory prices each MemorySize from (Lambda's REPORT line shows "Max Memory Used"): the CPU the
    handler took, apart from its waiting, and the worker process's peak resident memory."""
    invoker = make_invoker("burn")
    with capture_logs() as logs:
        result = invoker.invoke({"seconds": 0.2, "idle": 0.3, "mb": 64})
    assert result.ok, result
    assert result.cpu_ms is not None and result.max_rss_mb is not None
    assert 180 <= result.cpu_ms < result.duration_ms - 250  # the sleep is not CPU
    assert result.max_rss_mb >= 64
    line, = (e for e in logs if e["event"] == "invocation")
    assert (line["cpu_ms"], line["max_rss_mb"]) == (result.cpu_ms, result.max_rss_mb)
