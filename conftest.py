"""Fixtures every test directory shares: structlog's defaults for each test, and the Lambda artifact the
emulator's workers import from.

Workers run the unpacked artifact of this machine's architecture, never the source tree (DESIGN §10.1). It is
built once per session, and an unchanged tree is reused from ``.seglog/build`` across sessions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from seglog_deploy.build import Builder, host_arch
from seglog_deploy.manifest import Manifest

# Each pytest-xdist worker (./dev test runs two) starts the local stacks it needs on ports of its own: the tests'
# port base (SEGLOG_TEST_PORT_BASE, default 4640) moved 100 up per worker, before any test module reads it.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw"):
    os.environ["SEGLOG_TEST_PORT_BASE"] = str(int(os.environ.get("SEGLOG_TEST_PORT_BASE", "4640"))
                                              + 100 * int(_WORKER[2:]))

#: tests/browser.py: the `chromium` fixture (a tab of a headless Chromium), for any test directory;
#: tests/process_leaks.py: a test that drops a process it never waited for fails, naming the command.
pytest_plugins = ["browser", "process_leaks"]


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """Every test starts from structlog's defaults: a CLI test configures level filtering that would hide the
    lines another test captures with structlog.testing.capture_logs."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def lambda_build() -> Manifest:
    """Every function's artifact for this machine's architecture (the x86_64 twin on an x86_64 host)."""
    return Builder(arch=host_arch()).build()


@pytest.fixture(scope="session")
def lambda_artifact(lambda_build: Manifest) -> Path:
    """The build's manifest: what ``EmulatorSettings.artifact`` and ``seglog emulate --artifact`` take."""
    return Builder(arch=host_arch()).manifest_path


@pytest.fixture(scope="session")
def lambda_code(lambda_build: Manifest) -> Path:
    """The unpacked artifact the template's functions share (Lambda's /var/task): the last of an invoker's code
    directories, after a test's own handlers."""
    [record] = {record.key: record for record in lambda_build.artifacts.values()}.values()
    return record.code
