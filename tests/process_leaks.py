"""Every process a test starts is waited for before the test ends (issue 34: CI failed once in a few runs).

A ``subprocess.Popen`` finalised while its ``returncode`` is still unknown warns "subprocess N is still running"
from ``Popen.__del__`` when the process has not exited yet, and ``filterwarnings = ["error"]`` makes that a
failure of whichever test is running when the garbage collector gets to it: the liveness test failed so after its
own assertions had passed, when its supervisor was killed without a wait. Whether the process had exited by then
is a race; whether anyone waited for it is not. This plugin fails the test that started such a process, every
time, naming the command:

* every ``Popen`` made while a test runs (setup, call, teardown) is marked with the test's id;
* ``Popen.__del__`` notes a marked one that nobody waited for (``returncode`` unknown when it is finalised);
* after the test's teardown, a collection finalises what the test dropped, and a note makes the teardown fail.

A process a longer-lived fixture keeps (the local stack's servers, Chromium) is still referenced after the test,
so it is not finalised and not judged here; the fixture waits for it when it ends.
"""

from __future__ import annotations

import gc
import subprocess
import warnings
from collections.abc import Generator
from typing import Any

import pytest

_current: str | None = None
_started: set[str] = set()
_unwaited: list[tuple[str, int, str]] = []

_init = subprocess.Popen.__init__
_del = subprocess.Popen.__del__


def _tracking_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    if _current is not None:
        self._started_by_test = _current  # type: ignore[attr-defined]
        _started.add(_current)


def _noting_del(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    test = getattr(self, "_started_by_test", None)
    if test is None or not getattr(self, "_child_created", False) or self.returncode is not None:
        _del(self, *args, **kwargs)
        return
    _unwaited.append((test, self.pid, " ".join(map(str, self.args)) if isinstance(self.args, list | tuple)
                      else str(self.args)))
    with warnings.catch_warnings():  # reported once, by the test's teardown, with the command
        warnings.simplefilter("ignore", ResourceWarning)
        _del(self, *args, **kwargs)


subprocess.Popen.__init__ = _tracking_init  # type: ignore[method-assign]
subprocess.Popen.__del__ = _noting_del  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    global _current
    _current = item.nodeid
    try:
        return (yield)
    finally:
        _current = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    result = yield
    if item.nodeid not in _started:
        return result
    _started.discard(item.nodeid)
    gc.collect()  # finalise what the test dropped in reference cycles too
    mine = [u for u in _unwaited if u[0] == item.nodeid]
    _unwaited[:] = [u for u in _unwaited if u[0] != item.nodeid]
    if mine:
        shown = "; ".join(f"pid {pid}: {command[:200]}" for _, pid, command in mine)
        pytest.fail(f"the test dropped a process it never waited for ({shown}): wait for it (Popen.wait, "
                    "communicate, or use it as a context manager) after killing or stopping it", pytrace=False)
    return result
