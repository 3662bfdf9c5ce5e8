"""Chaos for any SAM application (issue 37): a user's workload drives the app while seeded faults fire, then a
verdict — the user's check, or the differential comparison with a fault-free run of the same seed.

``app`` (:mod:`.app`) is what the workload and the check are handed; :mod:`.session` brings one app up and down
(also for the pytest plugin); :mod:`.runner` runs and judges runs; :mod:`.kinds` says which fault kinds an app can
use; :mod:`.quiet` when it has settled; :mod:`.state` reads and compares final states."""
