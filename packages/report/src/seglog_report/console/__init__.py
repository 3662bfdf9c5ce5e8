"""The live console ``seglog emulate`` and ``seglog chaos --console-port`` serve (issue 12, point 3).

The emulator's processes feed it selected log events over UDP (``seglog_emulator.logfeed``); it keeps a
bounded window of them as a timeline (:mod:`.window`, :mod:`.aggregator`) with running totals for everything
older, reads queue depths and pending snapshots from the stack (:mod:`.probe`), and pushes changes to its pages
as server-sent events (:mod:`.stream`, :mod:`.server`).
"""

from seglog_report.console.aggregator import Aggregator
from seglog_report.console.probe import StackProbe
from seglog_report.console.server import Console

__all__ = ["Aggregator", "Console", "StackProbe"]
