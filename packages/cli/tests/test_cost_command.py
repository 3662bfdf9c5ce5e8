"""seglog cost on report.json files built from the report model: one run's ledger, a report's runs summed and one
by one, two runs side by side, and the paths and options it refuses (with what to pass instead)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from seglog_cli.main import cli
from seglog_report.model import Meter, Report, RunData, encode

WIDE = {"COLUMNS": "250"}  # rich lays tables out to the terminal's width; wide enough that no cell folds


def _report(directory: Path, *meters: Meter) -> Path:
    runs = [RunData(kind="chaos", title=f"chaos seed {n}", run=n, seed=40 + n, meter=meter)
            for n, meter in enumerate(meters, start=1)]
    directory.mkdir()
    (directory / "report.json").write_bytes(encode(Report(kind="chaos", title="chaos campaign",
                                                          command="seglog chaos", created_at=0.0, runs=runs)))
    return directory


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """Run 1: 600,000 writes ($0.375); run 2: 400,000 writes and 1,000 S3 PUTs ($0.25 + $0.005); 1M appends."""
    return _report(tmp_path / "campaign", Meter(dynamodb_write_units=600_000, appends=600_000),
                   Meter(dynamodb_write_units=400_000, s3_write_requests=1000, appends=400_000))


def _cost(*args: str) -> Result:
    return CliRunner().invoke(cli, ["cost", *args], env=WIDE)


def test_one_report_prints_its_runs_summed_then_each_run(two_runs: Path) -> None:
    result = _cost(str(two_runs))
    assert 0 == result.exit_code, result.output
    assert "cost ledger: us-east-1" in result.stdout
    assert "2 runs summed" in result.stdout
    assert "$0.63" in result.stdout  # $0.625 for 1M write units + $0.005 for 1,000 PUTs
    assert "1,000,000 appends: $0.63 per million appends, 1.01x the floor" in result.stdout
    [run_1] = [line for line in result.stdout.splitlines() if "chaos seed 1" in line]
    [run_2] = [line for line in result.stdout.splitlines() if "chaos seed 2" in line]
    assert "$0.375" in run_1 and "$0.255" in run_2


def test_run_picks_one_run_of_the_report(two_runs: Path) -> None:
    result = _cost(str(two_runs / "report.json"), "--run", "2")
    assert 0 == result.exit_code, result.output
    assert "run 2" in result.stdout and "$0.255" in result.stdout
    assert "chaos seed 1" not in result.stdout


def test_json_carries_the_whole_ledger_and_each_runs(two_runs: Path) -> None:
    result = _cost(str(two_runs), "--json")
    assert 0 == result.exit_code, result.output
    data = json.loads(result.stdout)
    assert 0.63 == pytest.approx(data["ledger"]["total"], rel=1e-12)
    assert [0.375, 0.255] == pytest.approx([run["ledger"]["total"] for run in data["runs"]], rel=1e-12)


def test_region_prices_the_same_run_elsewhere(two_runs: Path) -> None:
    data = json.loads(_cost(str(two_runs), "--json", "--region", "eu-central-1").stdout)
    assert "eu-central-1" == data["ledger"]["region"]
    assert 0.7625 + 0.0054 == pytest.approx(data["ledger"]["total"], rel=1e-12)


def test_two_reports_side_by_side_with_the_difference(tmp_path: Path) -> None:
    every_100 = _report(tmp_path / "every-100", Meter(dynamodb_write_units=1_000_000, appends=1_000_000))
    every_10 = _report(tmp_path / "every-10", Meter(dynamodb_write_units=1_000_000, s3_write_requests=2000,
                                                    appends=1_000_000))
    result = _cost(str(every_100), str(every_10))
    assert 0 == result.exit_code, result.output
    assert "every-100" in result.stdout and "every-10 - every-100" in result.stdout
    [puts] = [line for line in result.stdout.splitlines() if "PUT" in line]
    assert ["$0", "$0.01", "+$0.01"] == puts.split()[-3:]
    data = json.loads(_cost(str(every_100), str(every_10), "--json").stdout)
    assert ["every-100", "every-10"] == [one["label"] for one in data["ledgers"]]
    assert 0.01 == pytest.approx(data["ledgers"][1]["ledger"]["total"] - data["ledgers"][0]["ledger"]["total"])


def test_a_path_without_a_report_says_what_to_pass(tmp_path: Path) -> None:
    result = _cost(str(tmp_path))
    assert 2 == result.exit_code
    assert "no such file" in result.output and "pass a report.json" in result.output


def test_a_file_that_is_not_a_report_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not json")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    for name in ("notes.txt", "other.json"):
        result = _cost(str(tmp_path / name))
        assert 2 == result.exit_code, name
        assert "is not a report" in result.output and "pass a report.json" in result.output
    assert "kind" in _cost(str(tmp_path / "other.json")).output  # msgspec names the missing field


def test_an_unknown_region_lists_the_known_ones(two_runs: Path) -> None:
    result = _cost(str(two_runs), "--region", "mars-north-1")
    assert 2 == result.exit_code
    assert "mars-north-1" in result.output and "us-east-1" in result.output and "ap-southeast-1" in result.output


def test_an_unknown_run_lists_the_runs(two_runs: Path) -> None:
    result = _cost(str(two_runs), "--run", "9")
    assert 2 == result.exit_code
    assert "no run 9; its runs: 1, 2" in result.output


def test_three_paths_are_refused(two_runs: Path) -> None:
    result = _cost(str(two_runs), str(two_runs), str(two_runs))
    assert 2 == result.exit_code
    assert "pass one report" in result.output
