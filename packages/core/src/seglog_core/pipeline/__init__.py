"""The snapshot pipeline's logic, free of Lambda and boto3: routing stream records, the worker protocol."""

from __future__ import annotations

from seglog_core.pipeline.backoff import Backoff
from seglog_core.pipeline.outcomes import InvalidJobError, Outcome
from seglog_core.pipeline.router import RouteAction, keep_body, route
from seglog_core.pipeline.worker import CRASH_POINTS, SnapshotWorker

__all__ = ["CRASH_POINTS", "Backoff", "InvalidJobError", "Outcome", "RouteAction", "SnapshotWorker", "keep_body",
           "route"]
