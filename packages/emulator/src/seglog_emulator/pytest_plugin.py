"""seglog's pytest plugin: a user's SAM app on the local stack, under seeded faults, in their own tests
(issue 37, point 4). Installed with seglog's emulator (entry point ``pytest11``); its fixtures do nothing until a
test asks for them.

Fixtures:

* ``seglog_stack`` (session) — the local stack (LocalStack and DynamoDB Local as host processes), started if it is
  not running (``SEGLOG_LOCALSTACK_PORT``/``SEGLOG_DYNAMODB_PORT`` choose its ports) and stopped at the end of the
  session if this plugin started it. A conftest may override it with any :class:`StackEndpoints`.
* ``sam_app`` — a factory: ``sam_app("template.yaml", parameters={...}, faults="all", seed=7)`` provisions the
  template under a stack of its own, starts the emulator for its functions (IAM enforced) under the seed's faults,
  and returns ``app`` (``app.api_url()``, ``app.resource(id)``, ``app.client(service)``, ``app.settle()``, the same
  object ``seglog chaos`` hands a workload). Everything it started is stopped and deleted after the test.

Faults come from the factory's arguments or from the test's marker, ``@pytest.mark.seglog_chaos(faults="all",
seed=7)``; ``--seglog-seed N`` replaces every seed. A failing test that ran under faults gets a report section
naming its seeds, the command that replays it (``pytest <test> --seglog-seed N``) and the run's logs.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seglog_emulator.appchaos.app import App
from seglog_emulator.appchaos.kinds import app_plan, template_kinds
from seglog_emulator.appchaos.runner import stack_slug
from seglog_emulator.appchaos.session import AppSession, Target

#: What a test's runs under faults were: (seed, faults, run directory), kept on the test item.
RUNS = pytest.StashKey[list[tuple[int, str, str]]]()


@dataclass(frozen=True)
class StackEndpoints:
    """A running local stack, as the ``sam_app`` factory needs it."""

    endpoints: dict[str, str]
    profile: str
    region: str


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seglog-seed", type=int, default=None,
                     help="seglog: the seed of every sam_app run under faults (replays a failing test)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "seglog_chaos(faults='all', seed=0, rate=None): run this test's sam_app "
                                       "apps under seeded faults (seglog's pytest plugin)")


@pytest.fixture(scope="session")
def seglog_stack() -> Iterator[StackEndpoints]:
    """The local stack (started unless it runs; stopped at the end if started here)."""
    from seglog_stack import StackManager
    from seglog_stack.config import StackConfig

    manager = StackManager(StackConfig.resolve())
    started = not manager.status().healthy
    info = manager.up()
    try:
        yield StackEndpoints(dict(info.endpoints), info.profile.value, info.region)
    finally:
        if started:
            manager.down()


@pytest.fixture
def sam_app(seglog_stack: StackEndpoints, request: pytest.FixtureRequest,
            tmp_path: Path) -> Iterator[Callable[..., App]]:
    """A factory of apps from SAM templates, each on a stack of its own, torn down after the test."""
    marker = request.node.get_closest_marker("seglog_chaos")
    forced = request.config.getoption("--seglog-seed")
    runs = request.node.stash.setdefault(RUNS, [])
    with contextlib.ExitStack() as stack:
        made = 0

        def make(template: str | Path, parameters: dict[str, Any] | None = None, *, faults: str | None = None,
                 seed: int | None = None, rate: float | None = None, iam: bool = True,
                 schedule_scale: float = 1.0) -> App:
            nonlocal made
            path = Path(template).resolve()
            chosen = faults if faults is not None else (marker.kwargs.get("faults", "all") if marker else None)
            if chosen is not None and marker is not None and rate is None:
                rate = marker.kwargs.get("rate")
            run_seed = forced if forced is not None else seed if seed is not None else (
                int(marker.kwargs.get("seed", 0)) if marker is not None else 0)
            plan = None
            if chosen is not None and chosen != "none":
                plan = app_plan(run_seed, chosen, rate, *template_kinds(path))
            # Named after the test's node id: unique across modules (xdist runs tests of one name at once), and the
            # same in a replay (fault sites hash the resources' names).
            name = hashlib.blake2b(request.node.nodeid.encode(), digest_size=4).hexdigest()
            directory = tmp_path / f"seglog-{made}"
            session = AppSession(Target(template=path, endpoints=seglog_stack.endpoints, profile=seglog_stack.profile,
                                        region=seglog_stack.region, parameters=dict(parameters or {}), iam=iam,
                                        schedule_scale=schedule_scale),
                                 stack=f"pt-{stack_slug(path)}-{name}-{made}", directory=directory, plan=plan,
                                 seed=run_seed)
            made += 1
            app = stack.enter_context(session).app
            if plan is not None:
                runs.append((run_seed, chosen or "", str(directory)))
            return app

        yield make


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    runs = item.stash.get(RUNS, [])
    if runs and report.failed:
        lines = [f"seed {seed} (faults {faults}); logs: {directory}" for seed, faults, directory in runs]
        seeds = sorted({seed for seed, _, _ in runs})
        lines.append(f"replay: pytest {item.nodeid} --seglog-seed {seeds[0]}")
        report.sections.append(("seglog chaos", "\n".join(lines)))
    return report
