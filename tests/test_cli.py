"""The seglog command line against the real local stack: sheets, idempotent edits, dump, verify, bad input.

Commands run in-process through click's runner with the deployment's environment (resource names and SDK
endpoints), exactly as `eval "$(seglog env)"` sets them; the concurrency check runs real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from seglog_cli.main import cli
from seglog_core.reader import LogReader
from seglog_plugin.resources import backend_of, local_env
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack


@pytest.fixture
def run(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for key, value in local_env(deployment).items():
        monkeypatch.setenv(key, value)
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return invoke


def _entries(deployment: LocalDeployment, log: str) -> list[dict[str, object]]:
    reader = LogReader(store=backend_of(deployment).store)
    return [{"num": e.num, "K": e.entry_id} for e in reader.all_entries(uuid.UUID(log))]


def test_create_set_show_dump_verify(run, deployment: LocalDeployment) -> None:  # type: ignore[no-untyped-def]
    created = run("sheet", "create")
    assert created.exit_code == 0
    log = created.stdout.strip()
    uuid.UUID(log)
    assert run("sheet", "set", log, "A1=42", "B2=hello", "C3='7").exit_code == 0
    shown = run("sheet", "show", log, "--json")
    assert json.loads(shown.stdout)["rows"] == [[42], [None, "hello"], [None, None, "7"]]
    assert "hello" in run("sheet", "show", log).stdout
    dumped = [json.loads(line) for line in run("log", "dump", log, "--json").stdout.splitlines()]
    assert [(d["segment"], d["num"], d["type"]) for d in dumped] == [(0, 0, "snap"), (0, 1, "set"), (0, 2, "set"),
                                                                     (0, 3, "set")]
    assert {"segment", "num", "type", "entry_id", "external", "created"} <= set(dumped[1])
    verified = run("log", "verify", log, "--json")
    assert verified.exit_code == 0
    report = json.loads(verified.stdout)
    assert {k: report[k] for k in ("log_id", "ok", "violations", "entries", "segments")} == {
        "log_id": log, "ok": True, "violations": [], "entries": 4, "segments": 1}


def test_the_same_entry_id_twice_makes_one_entry(run, deployment: LocalDeployment) -> None:  # type: ignore[no-untyped-def]
    log = run("sheet", "create").stdout.strip()
    entry_id = str(uuid.uuid4())
    assert run("sheet", "set", log, "A1=1", "--entry-id", entry_id).exit_code == 0
    assert run("sheet", "set", log, "B1=2").exit_code == 0
    again = run("sheet", "set", log, "A1=1", "--entry-id", entry_id)
    assert again.exit_code == 0
    assert "already there" in again.stdout
    assert [str(e["K"]) for e in _entries(deployment, log)].count(entry_id) == 1


def test_a_repeat_with_the_printed_since_finds_its_entry_behind_a_later_snapshot(  # type: ignore[no-untyped-def]
        run, deployment: LocalDeployment) -> None:
    """Between the two runs a snapshot completed after the first run's entry: looking from the latest snapshot
    would miss it and store it twice; the --since the first run printed finds it."""
    log = run("sheet", "create").stdout.strip()
    entry_id = str(uuid.uuid4())
    first = run("sheet", "set", log, "A1=1", "--entry-id", entry_id)
    since = first.stdout.split("--since ")[1].split(")")[0]
    backend, lid = backend_of(deployment), uuid.UUID(log)
    snapshot = backend.event_log().append_snapshot(lid)
    backend.store.complete_snapshot(lid, snapshot.segment, snapshot.num, "root-of-a-later-snapshot")

    again = run("sheet", "set", log, "A1=1", "--entry-id", entry_id, "--since", since)

    assert ("0/0", 0) == (since, again.exit_code)
    assert "already there" in again.stdout
    assert [str(e["K"]) for e in _entries(deployment, log)].count(entry_id) == 1
    assert "SEGMENT/NUM" in run("sheet", "set", log, "A1=1", "--entry-id", entry_id, "--since", "7").output


@pytest.mark.parametrize("args, message", [
    (("A0=1",), "not a cell reference"),
    (("A1=1", "1A=2"), "not a cell reference"),
    (("A1",), "not an assignment"),
    (("A1=" + "x" * 40_000,), "limit"),
])
def test_bad_edits_write_nothing(run, deployment: LocalDeployment, args: tuple[str, ...], message: str) -> None:  # type: ignore[no-untyped-def]
    log = run("sheet", "create").stdout.strip()
    result = run("sheet", "set", log, *args)
    assert result.exit_code != 0
    assert message in result.stderr
    assert len(_entries(deployment, log)) == 1


def test_unknown_and_malformed_log_ids_are_clear_errors(run) -> None:  # type: ignore[no-untyped-def]
    missing = run("sheet", "set", str(uuid.uuid4()), "A1=1")
    assert missing.exit_code != 0
    assert "no log" in missing.stderr
    malformed = run("sheet", "show", "not-a-uuid")
    assert malformed.exit_code != 0
    assert "not a log id" in malformed.stderr


def test_import_csv_and_xlsx_and_refuse_unreadable_files(run, deployment: LocalDeployment,
                                                         tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import openpyxl

    log = run("sheet", "create").stdout.strip()
    csv_file = tmp_path / "stock.csv"
    csv_file.write_text("Product,Price\nNails,0.01\nScrews,2\n")
    assert run("sheet", "import", log, str(csv_file)).exit_code == 0
    assert json.loads(run("sheet", "show", log, "--json").stdout)["rows"] == [
        ["Product", "Price"], ["Nails", 0.01], ["Screws", 2]]
    book = openpyxl.Workbook()
    book.active.append(["Bolts", 3])  # type: ignore[union-attr]
    book.save(tmp_path / "more.xlsx")
    assert run("sheet", "import", log, str(tmp_path / "more.xlsx")).exit_code == 0
    assert json.loads(run("sheet", "show", log, "--json").stdout)["rows"] == [["Bolts", 3]]
    before = len(_entries(deployment, log))
    (tmp_path / "broken.xlsx").write_bytes(b"not a zip")
    for bad in (tmp_path / "broken.xlsx", tmp_path / "missing.csv"):
        result = run("sheet", "import", log, str(bad))
        assert result.exit_code != 0
        assert "cannot import" in result.stderr
    assert len(_entries(deployment, log)) == before


def test_concurrent_processes_leave_a_gap_free_log_with_each_entry_id_once(stacks) -> None:  # type: ignore[no-untyped-def]
    """16 processes x N `seglog sheet set` calls on one sheet.

    N is 2 in the suite: the 16 first calls start at once, which is the contention the check needs, and each
    further round only repeats it at the price of 16 more process launches (each about 1.2 s of CPU importing
    the CLI and boto3: 80 of them took 111 s of CI's suite on 2 cores). SEGLOG_CLI_CALLS=20 runs the full check
    (320 process launches, about 6 minutes).

    On the default profile only: the log algorithm is the same on both, and 320 process launches are costly.
    """
    deployment = stacks.deployment("dynamodb-local")
    calls = int(os.environ.get("SEGLOG_CLI_CALLS", "2"))
    env = {**os.environ, **local_env(deployment)}
    seglog = str(Path(sys.executable).with_name("seglog"))
    log = subprocess.run([seglog, "sheet", "create"], env=env, check=True, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL).stdout.strip()

    def client(index: int) -> list[str]:
        ids = []
        for n in range(calls):
            entry_id = str(uuid.uuid4())
            subprocess.run([seglog, "sheet", "set", log, f"{chr(65 + index)}{n + 1}={n}", "--entry-id", entry_id],
                           env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
            ids.append(entry_id)
        return ids

    with ThreadPoolExecutor(16) as pool:
        acknowledged = [i for ids in pool.map(client, range(16)) for i in ids]
    entries = _entries(deployment, log)
    assert [e["num"] for e in entries] == list(range(16 * calls + 1))
    stored = [str(e["K"]) for e in entries if e["K"] is not None]
    assert sorted(stored) == sorted(acknowledged)
    verified = subprocess.run([seglog, "log", "verify", log, "--json"], env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
    assert verified.returncode == 0
    assert json.loads(verified.stdout)["ok"] is True
