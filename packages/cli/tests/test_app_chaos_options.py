"""``seglog chaos --workload ...`` refuses what cannot run before it starts anything (no stack here: a refusal
that came after the stack was started would fail this test by timing out or touching ports)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from seglog_cli.main import cli

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sales-tally"


def chaos(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["chaos", "--template", str(EXAMPLE / "template.yaml"), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "expected"), [
    (["--check", "c.py"], "--check and --differential judge a workload: give --workload drive.py too"),
    (["--workload", str(EXAMPLE / "chaos" / "drive.py")], "give --check check.py (your own verdict) or "
                                                          "--differential"),
    (["--workload", str(EXAMPLE / "chaos" / "drive.py"), "--check", str(EXAMPLE / "chaos" / "check.py"),
      "--differential"], "not both and not neither"),
    (["--workload", str(EXAMPLE / "chaos" / "drive.py"), "--check", str(EXAMPLE / "chaos" / "check.py"),
      "--ignore", "at"], "--ignore names fields the differential comparison leaves out: add --differential"),
    (["--workload", "missing.py", "--differential"], "missing.py: no such file; write a Python file that defines "
                                                     "workload(app)"),
    (["--workload", str(EXAMPLE / "chaos" / "check.py"), "--differential"], "defines no function workload(app)"),
    (["--workload", str(EXAMPLE / "chaos" / "drive.py"), "--differential", "--faults", "dlq"],
     "dlq is seglog's own chaos fault"),
])
def test_what_cannot_run_is_refused_saying_what_to_give(args: list[str], expected: str) -> None:
    code, output = chaos(*args)
    assert code != 0
    assert expected in " ".join(output.split()), output


def test_the_replay_command_keeps_every_option_the_run_depends_on() -> None:
    from seglog_cli.app_chaos import _replay

    line = _replay(Path("t.yaml"), Path("d.py"), None, True, ("at",), {"Dedupe": "false"}, "all", 0.2, iam=False,
                   schedule_scale=60)
    assert line == ("seglog chaos --template t.yaml --workload d.py --differential --ignore at --parameter "
                    "Dedupe=false --faults all --rate 0.2 --no-iam --schedule-scale 60")
    assert "--no-iam" not in _replay(Path("t.yaml"), Path("d.py"), Path("c.py"), False, (), {}, "all", None)
