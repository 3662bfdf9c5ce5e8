"""--console-port: the console starts, points this process's children at its feed and says where it is; a busy
port leaves the emulator running without it."""

from __future__ import annotations

import logging
import os
import urllib.request

import pytest
import structlog

from seglog_cli.console import start_console, stop_console
from seglog_core import logs
from seglog_emulator import logfeed


def test_the_console_starts_feeds_from_this_process_and_stops_clean(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logfeed.ENV_VAR, raising=False)
    logs.configure(level=logging.WARNING)
    console = start_console(0, lane="chaos")
    assert console is not None
    try:
        assert f"live console at {console.url}" in capsys.readouterr().err
        assert console.feed_address == os.environ[logfeed.ENV_VAR]  # inherited by every process started now
        with urllib.request.urlopen(console.url + "state", timeout=5) as answer:
            assert 200 == answer.status
    finally:
        stop_console(console)
    assert logfeed.ENV_VAR not in os.environ
    assert not any(isinstance(p, logfeed.Forwarder) for p in structlog.get_config()["processors"])


def test_a_busy_console_port_is_reported_and_nothing_is_started(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logfeed.ENV_VAR, raising=False)
    first = start_console(0, lane="supervisor")
    assert first is not None
    try:
        port = int(first.url.rsplit(":", 1)[1].strip("/"))
        monkeypatch.delenv(logfeed.ENV_VAR)
        assert start_console(port, lane="supervisor") is None
        assert "--console-port 0 picks a free one" in capsys.readouterr().err
        assert logfeed.ENV_VAR not in os.environ
    finally:
        stop_console(first)
