"""One model of AWS (DESIGN §12): how Lambda feeds functions from a DynamoDB stream and an SQS queue (§9), the
template that declares them (its functions, mappings, HTTP APIs and schedules), the exact events Lambda hands a
function (:mod:`.events`), the catalogue of faults with AWS's
error codes and their site-keyed decisions (§7), CloudFormation's check of parameter values (§10.6) and
CloudWatch's alarm rules (§10.5). The checks' one Violation type is not here: it lives in core
(:mod:`seglog_core.violations`), which verify, the simulator's checks and chaos all build, and the reports carry.

Pure: no threads, no boto3, no greenlets. The emulator (threads and boto3 against the local stack) and the
simulator (greenlets and simulated services) are its two drivers.

Where AWS documents a behaviour, the module that models it cites the page once; where the docs are silent, the
model chooses once and says so.
"""
