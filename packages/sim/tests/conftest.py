"""Fixtures of the simulated services' tests."""

from __future__ import annotations

import pytest
from sim_support import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
