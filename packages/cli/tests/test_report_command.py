"""seglog report DIR draws report.html after the fact with the code of now: again from DIR's report.json, or from
the run.json files a campaign left under DIR (one per run, written as each ended); and says what DIR should hold
when it holds neither, or when its report.json is of a schema this seglog cannot read."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from seglog_cli.main import cli
from seglog_report.files import save_run
from seglog_report.model import SCHEMA, Report, RunData, Span, decode, encode


def _run(n: int, *, title: str = "seglog chaos") -> RunData:
    return RunData(kind="chaos", title=title, run=n, seed=10 + n,
                   spans=[Span(lane="client 0", group="client", start=0.1, end=0.4, outcome="acknowledged")])


def _report(*args: str) -> Result:
    return CliRunner().invoke(cli, ["report", *args])


def test_a_report_json_is_drawn_again(tmp_path: Path) -> None:
    """The page is written anew next to the report.json it was drawn from, the report's own title and command
    kept; the command prints where the page is."""
    (tmp_path / "report.json").write_bytes(encode(Report(kind="chaos", title="seglog chaos", command="seglog chaos",
                                                         created_at=0.0, runs=[_run(0), _run(1)])))
    result = _report(str(tmp_path))
    assert 0 == result.exit_code, result.output
    page = tmp_path / "report.html"
    assert f"report: {page}" == result.stdout.strip()
    assert "<title>seglog chaos</title>" in page.read_text()
    again = decode((tmp_path / "report.json").read_bytes())
    assert ([0, 1], "seglog chaos", SCHEMA) == ([run.run for run in again.runs], again.command, again.schema)


def test_the_run_json_files_a_stopped_campaign_left_are_gathered_into_a_page(tmp_path: Path) -> None:
    """No report.json (the campaign was killed before it wrote one): each run directory's run.json, in run order,
    becomes a report, titled as gathered after the fact, written next to them."""
    for n in (1, 0):
        directory = tmp_path / f"run-{n:03d}-seed-{10 + n}"
        directory.mkdir()
        save_run(_run(n, title="seglog chaos (interrupted)" if n else "seglog chaos"), directory)
    result = _report(str(tmp_path))
    assert 0 == result.exit_code, result.output
    assert f"report: {tmp_path / 'report.html'}" == result.stdout.strip()
    gathered = decode((tmp_path / "report.json").read_bytes())
    assert [(0, "seglog chaos"), (1, "seglog chaos (interrupted)")] == [(r.run, r.title) for r in gathered.runs]
    assert "chaos" == gathered.kind and "gathered after the fact" in gathered.title
    assert f"seglog report {tmp_path}" == gathered.command


def test_a_directory_with_neither_says_what_it_should_hold(tmp_path: Path) -> None:
    result = _report(str(tmp_path))
    assert 2 == result.exit_code
    assert "holds neither a report.json nor any run.json" in result.output
    assert "pass the report directory a run command printed" in result.output
    assert not (tmp_path / "report.html").exists()


def test_a_path_that_is_no_directory_is_refused(tmp_path: Path) -> None:
    result = _report(str(tmp_path / "missing"))
    assert 2 == result.exit_code
    assert "is not a directory" in result.output


def test_a_report_of_an_older_schema_that_does_not_fit_says_to_run_its_command_again(tmp_path: Path) -> None:
    """A report.json from before schemas were numbered (schema 1) whose runs no longer decode: the error names
    its schema and this seglog's, and what to do (run the command that wrote it again), not a decoder trace."""
    (tmp_path / "report.json").write_text(json.dumps({
        "kind": "chaos", "title": "old", "command": "seglog chaos --runs 2", "created_at": 0.0,
        "runs": [{"kind": "chaos", "title": "old", "run": 0, "seed": 1, "spans": [{"lane": "x", "start": "soon"}]}]}))
    result = _report(str(tmp_path))
    assert 2 == result.exit_code
    assert f"is a report of schema 1, older than the schema {SCHEMA} this seglog reads" in result.output
    assert "run the command that wrote it again (seglog chaos --runs 2)" in result.output


def test_a_run_json_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    (tmp_path / "run-000-seed-1").mkdir()
    (tmp_path / "run-000-seed-1" / "run.json").write_text('{"kind": "chaos"}')
    result = _report(str(tmp_path))
    assert 2 == result.exit_code
    assert "run-000-seed-1/run.json is not a run this seglog can read" in result.output.replace("\n", " ")


def test_a_seed_of_a_simulate_campaign_is_drawn_on_its_page(tmp_path: Path) -> None:
    """The seed picker's command: the campaign drew seed 1; --seed 3 runs seed 3 again, with the campaign's
    faults, and adds its timeline; a seed the campaign did not run, or a report that has no seeds, is refused."""
    ran = CliRunner().invoke(cli, ["simulate", "--seeds", "3", "--faults", "ddb_5xx,crash", "--report", str(tmp_path)])
    assert ran.exit_code in (0, 1), ran.output
    first = decode((tmp_path / "report.json").read_bytes())
    assert first.options == {"faults": "ddb_5xx,crash"} and len(first.seeds) == 3
    assert 3 not in {run.seed for run in first.runs}
    result = _report(str(tmp_path), "--seed", "3")
    assert 0 == result.exit_code, result.output
    again = decode((tmp_path / "report.json").read_bytes())
    [drawn] = [run for run in again.runs if run.seed == 3]
    assert drawn.spans and drawn.links and {r.seed for r in again.seeds} == {1, 2, 3}
    assert {kind.partition("@")[0] for kind in drawn.summary["faults"]} <= {"ddb_5xx", "crash"}
    assert "--seed 3" in (tmp_path / "report.html").read_text()
    refused = _report(str(tmp_path), "--seed", "99")
    assert 2 == refused.exit_code and "the campaign ran seeds 1 to 3, not [99]" in refused.output
    (tmp_path / "chaos").mkdir()
    (tmp_path / "chaos" / "report.json").write_bytes(encode(Report(kind="chaos", title="c", command="c",
                                                                   created_at=0.0, runs=[_run(0)])))
    refused = _report(str(tmp_path / "chaos"), "--seed", "1")
    assert 2 == refused.exit_code and "only a simulate campaign's report holds seeds" in refused.output
