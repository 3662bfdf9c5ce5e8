"""Fault decisions keyed by their site: one rule for both drivers (DESIGN §7, §12).

A decision is a pure function of (seed, kind, site): a BLAKE2b hash of the three (and a salt, for a
parameter), read as a number in [0, 1); the fault fires when it falls below the kind's rate. No random stream
is shared, so which thread or task asks first changes nothing, and a run is replayed from its seed alone. The
emulator decides every fault so (seglog_emulator.faults.schedule); the simulator decides so those it must key
as the emulator does — poller_restart, whose site carries the poller's incarnation — and draws the rest from
each task's own generator (seglog_sim.faults).

A site asked twice gets the same answer twice: to roll again, change the site. Sites are made of stable parts
(content, counters), never ids a service makes up at random, and a site whose parts restart in a new process
(an attempt counter) must carry the process's incarnation, or the same fault fires in every incarnation (the
emulator's poller_restart did: 17 restarts in 4 minutes, issue 19; the mutant ``restart_repeats`` puts it back).
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

_SCALE: Final = float(1 << 64)


def site(*parts: object) -> str:
    """A site key from stable parts: 16 hex digits."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def draw(seed: int, kind: str, key: str, salt: str) -> int:
    """A 64-bit number fixed by the seed, the kind, the site and the salt."""
    material = f"{seed}\x00{kind}\x00{key}\x00{salt}".encode()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big")


def fires(seed: int, kind: str, key: str, rate: float) -> bool:
    """Whether ``kind`` fires at site ``key`` under ``rate`` (the draw salted ``fire``, read in [0, 1))."""
    return draw(seed, kind, key, "fire") / _SCALE < rate


def restart_site(poller: str, key: str, incarnation: int) -> str:
    """The site of a poller_restart decision, readable in a fault's id: the poller's name, the batch's own key
    (its first record and attempt, or a digest of its messages) and how many times the poller started before."""
    return f"{poller}:{key}:{incarnation}"


__all__ = ["draw", "fires", "restart_site", "site"]
