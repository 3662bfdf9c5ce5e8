"""SIGTERM stops a campaign as Ctrl-C does, so a `kill` or a CI job's timeout still gets the page written; the exit
status says which signal it was (128 + its number), and the previous handler is back afterwards."""

from __future__ import annotations

import os
import signal

import pytest

from seglog_cli.reports import interruptible


def test_sigterm_inside_is_a_keyboard_interrupt_with_its_own_exit_status() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with interruptible() as stopped:
        assert 130 == stopped.status  # Ctrl-C, unless SIGTERM comes
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    assert 143 == stopped.status
    assert before == signal.getsignal(signal.SIGTERM)
