"""The parts of chaos for any app that need no stack: which kinds an app can use, loading the user's files, a
check's answer, the quiet wait, and the differential comparison (issue 37)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from seglog_awsmodel.config import EmulatorConfig
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.template import load_template
from seglog_emulator.appchaos.app import App, AppError
from seglog_emulator.appchaos.coverage import coverage_of, triggers_of
from seglog_emulator.appchaos.kinds import APP_RATES, SEGLOG_ONLY, app_kinds, app_plan
from seglog_emulator.appchaos.quiet import Busy, wait_quiet
from seglog_emulator.appchaos.runner import AppRun
from seglog_emulator.appchaos.scripts import ScriptError, load_function, violations_of
from seglog_emulator.appchaos.state import AppState, _plain, compare
from seglog_emulator.faults.plan import FaultPlanError
from seglog_stack.local import LocalDeployment

# ---------------------------------------------------------------------------------------------- kinds


def test_all_names_the_kinds_any_app_can_use_and_no_more() -> None:
    plan = app_plan(7, "all", None, app_kinds({}))
    assert set(plan.specs) == set(APP_RATES)
    assert not set(plan.specs) & SEGLOG_ONLY
    assert FaultKind.WORKER_CRASH not in plan.specs and FaultKind.CLOCK_SKEW in plan.specs  # no hook needed
    assert all(plan.specs[kind].rate == rate for kind, rate in APP_RATES.items())


def test_an_app_with_crash_points_and_a_hook_gets_the_crash_kinds_with_its_points() -> None:
    kinds = app_kinds({"InvocationHook": "hooks", "CrashPoints": {"Worker": ["after_write"]}})
    plan = app_plan(1, "all", None, kinds, crash_points=["after_write"])
    assert plan.specs[FaultKind.WORKER_CRASH].crash_points == ("after_write",)
    assert FaultKind.CLOCK_SKEW in plan.specs


def test_kinds_the_app_cannot_use_are_refused_by_name_with_the_reason() -> None:
    with pytest.raises(FaultPlanError) as caught:
        app_plan(1, "dlq,worker_crash,no_such_kind", None, app_kinds({}))
    text = str(caught.value)
    assert "dlq is seglog's own chaos fault" in text
    assert "worker_crash needs the template's Metadata SeglogEmulator (InvocationHook, CrashPoints)" in text
    assert "unknown fault kind 'no_such_kind'" in text


def test_a_kind_given_with_a_rate_keeps_it_and_rate_sets_the_others() -> None:
    plan = app_plan(1, "duplicate_delivery=1,reorder", 0.5, app_kinds({}))
    assert (plan.specs[FaultKind.DUPLICATE_DELIVERY].rate, plan.specs[FaultKind.REORDER].rate) == (1.0, 0.5)
    assert app_plan(1, "none", None, app_kinds({})).specs == {}


# ---------------------------------------------------------------------------------------------- the user's files


def test_a_workload_file_is_loaded_with_its_neighbours_importable(tmp_path: Path) -> None:
    (tmp_path / "shared.py").write_text("VALUE = 41\n")
    (tmp_path / "drive.py").write_text("from shared import VALUE\n\ndef workload(app):\n    return VALUE + 1\n")
    assert load_function(tmp_path / "drive.py", "workload")(None) == 42


@pytest.mark.parametrize(("text", "expected"), [
    (None, "no such file; write a Python file that defines check(app)"),
    ("def workload(app): pass\n", "defines no function check(app)"),
    ("raise RuntimeError('boom')\n", "importing it raised RuntimeError: boom"),
    ("check = 3\n", "defines no function check(app)"),
])
def test_a_file_that_cannot_serve_is_refused_saying_what_to_write(tmp_path: Path, text: str | None,
                                                                   expected: str) -> None:
    path = tmp_path / "check.py"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ScriptError, match=re.escape(expected)):
        load_function(path, "check")


def test_a_checks_answer_is_a_list_of_violations_and_nothing_else_passes_for_none() -> None:
    assert violations_of(None, "check(app)") == []
    assert violations_of(["a", 2], "check(app)") == ["a", "2"]
    assert violations_of((), "check(app)") == []
    [found] = violations_of(True, "check(app)")
    assert "check(app) returned bool True; a check returns a list of violations" in found


# ---------------------------------------------------------------------------------------------- the app handle


def test_the_app_names_what_it_has_when_asked_for_what_it_lacks() -> None:
    deployment = LocalDeployment(profile="p", region="eu-west-1", endpoints={"sqs": "http://127.0.0.1:1"},
                                 names={"Orders": "s-Orders"}, attributes={"Orders.Arn": "arn:x"})
    app = App(deployment=deployment, apis={}, seed=3)
    assert app.resource("Orders") == "s-Orders" and app.attribute("Orders", "Arn") == "arn:x"
    with pytest.raises(AppError, match="no resource 'Order' was provisioned; the template's are: Orders"):
        app.resource("Order")
    with pytest.raises(AppError, match="no function has an HttpApi event"):
        app.api_url()
    with pytest.raises(AppError, match="serves no 's3'; it serves sqs"):
        app.client("s3")
    assert app.random.random() == App(deployment=deployment, apis={}, seed=3).random.random()
    two = App(deployment=deployment, apis={"A": "http://a", "B": "http://b"}, seed=0)
    assert two.api_url("B") == "http://b"
    with pytest.raises(AppError, match="the template has 2 APIs: name one of A, B"):
        two.api_url()


# ---------------------------------------------------------------------------------------------- quiet


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_quiet_means_idle_for_the_whole_window_not_once() -> None:
    clock = Clock()
    looks = iter([Busy({}, {})] * 4 + [Busy({"queue:F.E": 1}, {})] + [Busy({}, {})] * 100)
    took, last = wait_quiet(lambda: next(looks), timeout=60, quiet_seconds=3, clock=clock, sleep=clock.sleep)
    assert not last and took == pytest.approx(1.25 + 3, abs=0.01)


def test_an_app_never_quiet_is_reported_with_what_keeps_it_busy() -> None:
    clock = Clock()
    took, last = wait_quiet(lambda: Busy({}, {"http://q/000/app-Sales": 2}), timeout=5, clock=clock,
                            sleep=clock.sleep)
    assert took is None and str(last) == "app-Sales: 2 queued"


# ---------------------------------------------------------------------------------------------- differential


def state(*records: dict[str, object]) -> AppState:
    return AppState({"Totals": [({"sku": r["sku"]}, r) for r in records]})


def test_the_same_records_in_another_order_do_not_differ() -> None:
    a = state({"sku": "tea", "units": 3}, {"sku": "cocoa", "units": 1})
    b = state({"sku": "cocoa", "units": 1}, {"sku": "tea", "units": 3})
    assert compare(a, b) == []


def test_a_counter_counted_twice_differs_and_says_how() -> None:
    [difference] = compare(state({"sku": "tea", "units": 3}), state({"sku": "tea", "units": 6}))
    assert difference.expected == ('{"sku":"tea","units":3}',) and difference.found == ('{"sku":"tea","units":6}',)
    assert difference.lines()[0] == ("Totals: 1 record(s) of the fault-free run not in the faulted one, "
                                     "1 the other way")


def test_a_record_written_twice_differs_as_a_multiset() -> None:
    once, twice = state({"sku": "tea", "units": 3}), state({"sku": "tea", "units": 3}, {"sku": "tea", "units": 3})
    [difference] = compare(once, twice)
    assert difference.expected == () and len(difference.found) == 1


def test_ignored_fields_are_dropped_at_any_depth() -> None:
    a = state({"sku": "tea", "units": 3, "at": 1, "meta": {"at": 5, "by": "x"}})
    b = state({"sku": "tea", "units": 3, "at": 2, "meta": {"at": 9, "by": "x"}})
    assert compare(a, b) != []
    assert compare(a, b, ignore=["at"]) == []


def test_dynamodb_values_read_as_plain_json() -> None:
    assert _plain({"n": Decimal("3"), "f": Decimal("1.5"), "s": {"b", "a"}, "b": b"\x00"}) == {
        "n": 3, "f": 1.5, "s": ["a", "b"], "b": "AA=="}


# ---------------------------------------------------------------------------------------------- coverage


def test_coverage_names_the_kinds_and_call_boundaries_no_run_reached() -> None:
    plan = app_plan(1, "duplicate_delivery,reorder,crash_after_call", None, app_kinds({}))
    one = AppRun(run=0, seed=1, faulted=True, stack="s", faults={"duplicate_delivery": 2},
                 most_calls={"Tally": 3, "Quiet": 0}, crashed_calls={"Tally": [1]})
    two = AppRun(run=1, seed=2, faulted=True, stack="s", faults={"crash_after_call": 2},
                 most_calls={"Tally": 9}, crashed_calls={"Tally": [3, 6]})
    found = coverage_of([plan], [one, two])
    assert found.boundaries == {"Tally": 6}  # capped by the plan's highest call (1-6)
    assert found.missed() == ["reorder"] + [f"crash_after_call Tally#{n}" for n in (2, 4, 5)]
    assert "call boundaries of Tally: crashed after call 1, 3, 6 of 1-6" in found.lines()
    whole = coverage_of([plan], [AppRun(run=0, seed=1, faulted=True, stack="s",
                                        faults={"duplicate_delivery": 1, "reorder": 1, "crash_after_call": 1},
                                        most_calls={"Tally": 1}, crashed_calls={"Tally": [1]})])
    assert whole.missed() == [] and whole.lines()[-1].endswith("was reached")


def test_a_kind_about_a_service_no_function_called_is_unreachable_not_missed() -> None:
    plan = app_plan(1, "aws_error,s3_error,ddb_5xx", None, app_kinds({}))
    run = AppRun(run=0, seed=1, faulted=True, stack="s", faults={"ddb_5xx": 1}, services=["dynamodb"])
    found = coverage_of([plan], [run])
    assert found.unreachable == {"aws_error", "s3_error"} and found.missed() == []
    assert "unreachable (no function called their service, or no trigger of the app delivers them): aws_error, " \
        "s3_error" in found.lines()
    other = coverage_of([plan], [AppRun(run=0, seed=1, faulted=True, stack="s", services=["dynamodb", "sqs"])])
    assert other.missed() == ["aws_error", "ddb_5xx"] and other.unreachable == {"s3_error"}


def test_a_kind_about_a_trigger_the_app_lacks_is_unreachable_and_unknown_triggers_judge_nothing() -> None:
    """sales-tally has a queue and no API: lost_response cannot fire, reorder and duplicates can (CI's app-chaos
    coverage line listed lost_response as never reached)."""
    plan = app_plan(1, "lost_response,reorder,duplicate_delivery,poller_restart", None, app_kinds({}))
    queue_only = AppRun(run=0, seed=1, faulted=True, stack="s", faults={"reorder": 1}, triggers=["queue"])
    found = coverage_of([plan], [queue_only])
    assert found.unreachable == {"lost_response"}
    assert found.missed() == ["duplicate_delivery", "poller_restart"]
    api_only = coverage_of([plan], [AppRun(run=0, seed=1, faulted=True, stack="s", triggers=["api"])])
    assert api_only.unreachable == {"reorder", "duplicate_delivery", "poller_restart"}
    assert api_only.missed() == ["lost_response"]
    unknown = coverage_of([plan], [AppRun(run=0, seed=1, faulted=True, stack="s")])
    assert unknown.unreachable == set() and len(unknown.missed()) == 4


def test_the_triggers_of_a_template_are_read_from_its_events() -> None:
    template = load_template(Path(__file__).resolve().parents[3] / "examples" / "sales-tally" / "template.yaml")
    config = EmulatorConfig.from_template(template, lambda value: f"local:{value}")
    assert triggers_of(config) == {"queue"}
