"""The live console beside a real emulator run on the local stack (issue 12, point 3): every invocation the run's
log has is on the console's timeline, nothing is left in flight, and its panels agree with the log's pollers'
usage lines, the template's memory sizes and the stack's queues."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from emulator.test_supervisor import edit_and_wait, settings_for, wait_for
from seglog_emulator.supervisor import Supervisor
from seglog_report.console import Console
from seglog_stack import local

pytestmark = pytest.mark.stack


def state(console: Console) -> dict[str, Any]:
    """What ``/state`` answers (the server tests read it over HTTP)."""
    return console.broadcaster.state()


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def test_the_console_shows_every_invocation_of_a_run_and_the_pollers_figures(
        chaos_deployment: local.LocalDeployment, console: Console, tmp_path: Path, lambda_artifact: Path) -> None:
    output = tmp_path / "emulator.log"
    with output.open("w") as sink:
        supervisor = Supervisor(settings_for(chaos_deployment, tmp_path / "state", lambda_artifact), output=sink)
        supervisor.start()
        try:
            supervisor.wait_ready()
            edit_and_wait(supervisor, chaos_deployment, 21)
            wait_for(lambda: state(console)["panels"]["stack"].get("queues"), 10, "the probe's queue depths")
        finally:
            supervisor.stop()  # the pollers' last usage lines come as they stop
    lines = log_lines(output)
    invocations = {line["request_id"]: line for line in lines if line.get("event") == "invocation"}

    def shown() -> set[str]:
        return {item["ids"]["request_id"] for item in state(console)["items"] if item.get("group") == "function"}

    wait_for(lambda: shown() >= set(invocations), 10, "the console to show every invocation of the log")
    time.sleep(0.5)  # the last pushes
    seen = state(console)
    spans = [item for item in seen["items"] if item.get("group") == "function"]
    assert set(invocations) == {span["ids"]["request_id"] for span in spans}
    jobs = {line["request_id"]: line["outcome"] for line in lines if line.get("event") == "snapshot job"}
    for span in spans:  # each bar on its worker's lane, coloured by the outcome the log gave it (or its job's)
        line = invocations[span["ids"]["request_id"]]
        outcome = jobs.get(line["request_id"], line["outcome"]) if line["outcome"] == "success" else line["outcome"]
        assert (f"{line['function']} pid {line['pid']}", outcome) == (span["lane"], span["outcome"])
    assert [] == seen["in_flight"]
    by_function = Counter(line["function"] for line in invocations.values())
    panels = seen["panels"]
    assert by_function == Counter({f: sum(o.values()) for f, o in panels["invocations"].items()})
    functions = panels["cost"]["meter"]["functions"]
    assert {f: line["memory_mb"] for f, line in {x["function"]: x for x in invocations.values()}.items()} == {
        f: use["memory_mb"] for f, use in functions.items()}
    assert 21 == panels["cost"]["meter"]["appends"]  # acknowledged appends, from the API's request lines

    usage = [line for line in lines if line.get("event") == "poller usage"]
    requests = Counter[str]()
    for line in usage:
        requests[line["poller"]] += line["requests"]
    assert {"StreamRouterFunction.Entries", "SnapshotWorkerFunction.Jobs"} == set(requests)
    assert all(n > 0 for n in requests.values())
    assert requests == {name: figures["requests"] for name, figures in panels["pollers"].items()}
    shards = {shard for line in usage if line["service"] == "dynamodbstreams" for shard in line["shards"]}
    assert shards and shards <= set(panels["iterator_age"])
    assert {"queue", "dlq"} == set(panels["stack"]["queues"])
    assert [] == [i for i in seen["items"] if i.get("outcome") == "incomplete"]
    assert ["emulator started", "emulator stopped"] == [i["kind"] for i in seen["items"]
                                                        if i.get("lane") == "supervisor"]
