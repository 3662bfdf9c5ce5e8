"""examples/sales-tally, run as its README says, and under chaos (issue 37, points 2-5): with Dedupe=true a sale is
counted once however often SQS delivers it — its written check (through the pytest plugin) and the differential
verdict pass under duplicate deliveries, crashes and lost DynamoDB answers; with Dedupe=false (deliberately not
idempotent) the check and the differential verdict fail, naming what differs and the seed that replays it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.support import EXAMPLES, client, running, wait_for
from seglog_cli.app_chaos import app_report, run_app_chaos
from seglog_emulator.appchaos.app import App
from seglog_emulator.appchaos.scripts import load_function
from seglog_emulator.faults.runtime import read_injected
from seglog_emulator.pytest_plugin import RUNS
from seglog_emulator.supervisor import Supervisor
from seglog_report.html import publish

pytestmark = pytest.mark.stack

TEMPLATE = EXAMPLES / "sales-tally" / "template.yaml"
REPO = EXAMPLES.parent
CHAOS = EXAMPLES / "sales-tally" / "chaos"


@pytest.fixture(scope="module")
def tally(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("sales-tally", stacks, tmp_path_factory.mktemp("tally-state")) as supervisor:
        yield supervisor


def test_a_sale_sent_to_the_queue_is_tallied(tally: Supervisor) -> None:
    names = tally.settings.deployment.names
    client(tally, "sqs").send_message(QueueUrl=names["SalesQueue"],
                                      MessageBody=json.dumps({"sale": "readme-1", "sku": "tea", "qty": 3}))
    ddb = client(tally, "dynamodb")

    def units() -> int:
        item = ddb.get_item(TableName=names["TotalsTable"], Key={"sku": {"S": "tea"}}, ConsistentRead=True)
        return int(item.get("Item", {}).get("units", {}).get("N", 0))

    assert wait_for(units, 30, "tea tallied") == 3
    counted = ddb.get_item(TableName=names["CountedTable"], Key={"sale": {"S": "readme-1"}}, ConsistentRead=True)
    assert counted["Item"]["qty"] == {"N": "3"}


def chaos(stacks: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], *, faults: str, dedupe: bool,
          differential: bool, seed: int = 1, runs: int = 1) -> tuple[bool, str]:
    """The campaign as `seglog chaos --workload ...` runs it, and its printed text; its report page is written to
    ``tmp_path/page``."""
    base = stacks.deployment("dynamodb-local")
    campaign, _text = run_app_chaos(
        stack=lambda: (base.endpoints, base.profile, base.region), template=TEMPLATE,
        workload=CHAOS / "drive.py", check=None if differential else CHAOS / "check.py", differential=differential,
        ignore=(), parameters={"Dedupe": "true" if dedupe else "false"}, seed=seed, runs=runs, faults=faults,
        rate=None, state_root=tmp_path, iam=True, fail_fast=False, as_json=False, artifact=None)
    publish(app_report(campaign, _text, "seglog chaos ..."), tmp_path / "page")
    return campaign.ok, capsys.readouterr().out


def test_the_written_check_catches_the_counter_counted_per_delivery_with_its_seed(
        stacks: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The idempotent mode passing its check under faults is the pytest plugin's test below (and CI's campaign)."""
    ok, out = chaos(stacks, tmp_path, capsys, dedupe=False, differential=False, faults="duplicate_delivery=1",
                    seed=6)
    assert not ok, out
    assert re.search(r"  violation: \w+: \d+ units tallied, \d+ sold", out), out
    replay = ("replay: seglog chaos --template " + str(TEMPLATE) + " --workload " + str(CHAOS / "drive.py")
              + " --check " + str(CHAOS / "check.py") + " --parameter Dedupe=false --faults duplicate_delivery=1"
              + " --seed 6 --runs 1")
    assert replay in out, out


def test_the_differential_verdict_catches_the_counter_counted_per_delivery(
        stacks: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok, out = chaos(stacks, tmp_path, capsys, dedupe=False, differential=True, faults="duplicate_delivery=1", seed=4)
    assert not ok, out
    assert "TotalsTable: " in out and "  faults that fired: duplicate_delivery x" in out, out
    # Each differing total is named with the invocations that wrote it: the deliveries handled twice (point 3).
    assert "written in the faulted run by " in out and ", delivery handled 2 times" in out, out
    assert "UpdateItem from " in out or "TransactWriteItems from " in out, out
    replay = ("replay: seglog chaos --template " + str(TEMPLATE) + " --workload " + str(CHAOS / "drive.py")
              + " --differential --parameter Dedupe=false --faults duplicate_delivery=1 --seed 4 --runs 1")
    assert replay in out, out
    state = json.loads((tmp_path / "run-000-seed-4" / "state.json").read_text())
    assert state["resources"]["CountedTable"] == []  # nothing recorded: this mode counts every delivery
    assert (tmp_path / "page" / "report.html").is_file()
    drawn = json.loads((tmp_path / "page" / "report.json").read_text())  # both runs, the difference, its faults
    assert [run["title"] for run in drawn["runs"]] == ["fault-free run 1", "run 1"]
    assert [v["invariant"] for v in drawn["runs"][1]["violations"]] == ["DIFFERENTIAL"]
    assert any(marker["kind"] == "duplicate_delivery" for marker in drawn["runs"][1]["markers"]), drawn["runs"][1]


def test_the_differential_verdict_passes_the_idempotent_twin(
        stacks: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok, out = chaos(stacks, tmp_path, capsys, dedupe=True, differential=True,
                    faults="duplicate_delivery=1,ddb_lost_response=0.2", seed=4)
    assert ok, out
    assert "1/1 runs ok" in out


# ---------------------------------------------------------------------------------------------- the pytest plugin

drive = load_function(CHAOS / "drive.py", "workload")
check = load_function(CHAOS / "check.py", "check")


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1,crash_after_call=0.3,visibility_expiry=0.3", seed=3)
def test_with_the_pytest_plugin_the_tally_is_exact_under_faults(sam_app: Callable[..., App],
                                                                 request: pytest.FixtureRequest) -> None:
    app = sam_app(TEMPLATE)
    drive(app)
    app.settle()
    assert check(app) == []
    [(seed, _faults, directory)] = request.node.stash[RUNS]
    fired = {fault["kind"] for fault in read_injected(Path(directory) / "faults")}
    assert seed == 3 and {"duplicate_delivery", "crash_after_call"} <= fired, fired


INNER_CONFTEST = '''
import json, os

import pytest

from seglog_emulator.pytest_plugin import StackEndpoints


@pytest.fixture(scope="session")
def seglog_stack():
    return StackEndpoints(**json.loads(os.environ["OUTER_STACK"]))
'''

INNER_TEST = '''
import os
from pathlib import Path

import pytest

from seglog_emulator.appchaos.scripts import load_function

CHAOS = Path(os.environ["SALES_TALLY"]) / "chaos"


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1", seed=11)
def test_naive_tally(sam_app):
    app = sam_app(Path(os.environ["SALES_TALLY"]) / "template.yaml", {"Dedupe": "false"})
    load_function(CHAOS / "drive.py", "workload")(app)
    app.settle()
    assert load_function(CHAOS / "check.py", "check")(app) == []
'''


def readme_test() -> str:
    """The README's pytest example, as written (the block after "The same from pytest")."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"The same from pytest.*?^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert found is not None, "README.md lost its pytest example"
    return found.group(1)


def test_a_test_failing_under_the_plugins_faults_prints_its_replay_seed_and_the_readmes_passes(
        seglog_stack: Any, tmp_path: Path) -> None:
    """Two tests in a child pytest on this session's stack (from the repository root, as the README's runs): the
    README's own example, which must pass, and the naive tally under duplicates, which must fail with its replay."""
    (tmp_path / "test_naive.py").write_text(INNER_TEST)
    (tmp_path / "test_readme_example.py").write_text(readme_test())
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "SALES_TALLY": str(TEMPLATE.parent),
           "OUTER_STACK": json.dumps({"endpoints": seglog_stack.endpoints, "profile": seglog_stack.profile,
                                      "region": seglog_stack.region})}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "units tallied" in done.stdout, done.stdout[-3000:]
    assert "seglog chaos" in done.stdout and "seed 11 (faults duplicate_delivery=1)" in done.stdout, done.stdout
    assert "replay: pytest test_naive.py::test_naive_tally --seglog-seed 11" in done.stdout, done.stdout[-3000:]
