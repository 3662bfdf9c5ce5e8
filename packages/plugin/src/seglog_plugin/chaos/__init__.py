"""Chaos runs: client workloads through the HTTP API against the emulator under seeded faults, then verify.

* :class:`ChaosRunner` — one run (supervisor, workload, faults off, quiescence, I1-I6);
* :class:`Campaign` — many runs on fresh resources, each arming what earlier runs did not reach (:mod:`.coverage`);
* :class:`CampaignReport` — many runs, totals, what no run reached, replay commands;
* :class:`Workload` — the simulated clients (also the demo's).
"""

from seglog_plugin.chaos.campaign import Campaign
from seglog_plugin.chaos.report import CampaignReport
from seglog_plugin.chaos.runner import (
    CHAOS_PARAMETERS,
    CHAOS_STACK,
    DEFAULT_RATES,
    ChaosRunner,
    RunProgress,
    RunReport,
    default_plan,
)
from seglog_plugin.chaos.workload import ApiClient, ClientStats, Workload

__all__ = ["CHAOS_PARAMETERS", "CHAOS_STACK", "DEFAULT_RATES", "ApiClient", "Campaign", "CampaignReport",
           "ChaosRunner", "ClientStats", "RunProgress", "RunReport", "Workload", "default_plan"]
