"""`seglog sheet create/set/show/import --api-url URL` through the HTTP API of a running emulator: the same
commands and output as on the tables, with no stack configuration in the environment (only the API's URL)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from client.conftest import Emulated
from seglog_cli.main import cli
from signed_http import LOCAL

pytestmark = pytest.mark.stack


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The CLI in-process, without resource names or endpoints: a command that reached for the tables would
    fail for want of them, so a pass shows it went through the API."""
    for key in ("SEGLOG_ENTRIES_TABLE", "SEGLOG_API_URL", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(key, raising=False)
    # The API requires IAM authorization: the CLI signs with the environment's credentials (`seglog env` exports
    # the pair the emulator accepts).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", LOCAL.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", LOCAL.secret_access_key)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("SEGLOG_LOCALSTACK_PORT", "1")  # no local stack there either
    monkeypatch.setenv("SEGLOG_DYNAMODB_PORT", "1")
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(cli, list(args), catch_exceptions=False, env=env)

    return invoke


def test_create_set_import_show_through_the_api(run, emulator: Emulated, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each command's effect is in the sheet the API loads: cells set, a CSV imported through the upload flow
    (its body in S3), the grid shown."""
    url = ("--api-url", emulator.url)
    created = run("sheet", "create", *url)
    assert 0 == created.exit_code, created.output
    log = created.stdout.strip()
    assert run("sheet", "set", log, "A1=42", "B2=hello", *url).stdout.splitlines() == [
        "A1=42 -> entry 0/1", "B2=hello -> entry 0/2"]
    stock = tmp_path / "stock.csv"
    stock.write_text("item,qty\nnails,12\nscrews,7\n")
    imported = run("sheet", "import", log, str(stock), *url)
    assert imported.stdout.startswith("imported 3 rows from stock.csv -> entry 0/3 (body in S3: entries/"), \
        imported.output
    assert run("sheet", "set", log, "C1=x", *url).exit_code == 0
    shown = json.loads(run("sheet", "show", log, "--json", *url).stdout)
    rows = [["item", "qty", "x"], ["nails", 12], ["screws", 7]]
    assert {"log_id": log, "segment": 0, "num": 4, "rows": rows} == shown
    grid = run("sheet", "show", log, *url).stdout
    assert "screws" in grid and "(at entry 0/4; loaded through the API" in grid


def test_set_with_an_entry_id_twice_is_one_entry_and_the_url_can_come_from_the_environment(
        run, emulator: Emulated) -> None:  # type: ignore[no-untyped-def]
    """A repeated run of `set --entry-id` (after its first answer was lost) finds its entries: one of each id."""
    env = {"SEGLOG_API_URL": emulator.url}
    log = run("sheet", "create", env=env).stdout.strip()
    entry_id = str(uuid.uuid4())
    first = run("sheet", "set", log, "A1=1", "B1=2", "--entry-id", entry_id, env=env)
    again = run("sheet", "set", log, "A1=1", "B1=2", "--entry-id", entry_id, env=env)
    since = f"since 0/0 (to repeat this run: --entry-id {entry_id} --since 0/0)"
    assert [since, "A1=1 -> entry 0/1", "B1=2 -> entry 0/2"] == first.stdout.splitlines()
    assert [since, "A1=1 -> entry 0/1 (already there)", "B1=2 -> entry 0/2 (already there)"] == \
        again.stdout.splitlines()
    ids = [i for i in emulator.entry_ids(uuid.UUID(log)) if i is not None]
    assert [uuid.uuid5(uuid.UUID(entry_id), "0"), uuid.uuid5(uuid.UUID(entry_id), "1")] == ids


def test_refusals_are_one_line_errors(run, emulator: Emulated, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An unknown sheet is the API's 404 with its message, a bad file is refused before anything is sent; both
    exit 1 without a traceback."""
    missing = run("sheet", "set", str(uuid.uuid4()), "A1=1", "--api-url", emulator.url)
    assert (1, True) == (missing.exit_code, "log_not_found" in missing.output), missing.output
    bad = tmp_path / "notes.txt"
    bad.write_text("x")
    refused = run("sheet", "import", str(uuid.uuid4()), str(bad), "--api-url", emulator.url)
    assert (1, True) == (refused.exit_code, "save it as .csv" in refused.output), refused.output
    assert "Traceback" not in missing.output + refused.output


def test_without_credentials_the_cli_says_where_to_put_them(run, emulator: Emulated,  # type: ignore[no-untyped-def]
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No key in the environment, none in the (empty) AWS config files: a one-line error naming the variables;
    a profile that does not exist is named."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bare = run("sheet", "create", "--api-url", emulator.url)
    assert (1, True) == (bare.exit_code, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in bare.output), \
        bare.output
    profiled = run("sheet", "create", "--api-url", emulator.url, "--profile", "nobody")
    assert (1, True) == (profiled.exit_code, "nobody" in profiled.output), profiled.output
