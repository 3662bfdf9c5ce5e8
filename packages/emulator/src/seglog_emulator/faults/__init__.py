"""A seeded, replayable fault schedule for chaos runs (DESIGN §7).

* :class:`FaultPlan` — which kinds fire, how often, with what parameters, and the seed (a file or flags);
* :class:`FaultSchedule` — ``decide(kind, key)``: a pure function of (seed, kind, key), and the log of what fired;
* :class:`BotocoreFaultInjector` — the DynamoDB and S3 kinds, injected into boto3 clients.

The other kinds (SQS delivery, crashes, timeouts, clock skew, code versions, restarts) are decided here and
carried out by the supervisor; dlq, redrive and supervisor_restart by the chaos runner (:mod:`seglog_plugin.chaos`).
"""

from seglog_awsmodel.faults import AMOUNTS, EMULATED, ERROR_CODES, FaultKind
from seglog_emulator.faults.botocore_injector import BotocoreFaultInjector
from seglog_emulator.faults.plan import FaultPlan, FaultPlanError, FaultSpec
from seglog_emulator.faults.schedule import Decision, FaultSchedule, InjectedFault

__all__ = [
    "AMOUNTS",
    "EMULATED",
    "ERROR_CODES",
    "BotocoreFaultInjector",
    "Decision",
    "FaultKind",
    "FaultPlan",
    "FaultPlanError",
    "FaultSchedule",
    "FaultSpec",
    "InjectedFault",
]
