"""One model of AWS (DESIGN §12): how Lambda feeds functions from a DynamoDB stream and an SQS queue (§9), the
template that declares them, and the catalogue of faults with AWS's error codes (§7). The checks' one Violation
type of §12 is not here yet: core's verify, the simulator's checks and chaos still have their own.

Pure: no threads, no boto3, no greenlets. The emulator (threads and boto3 against the local stack) and the
simulator (greenlets and simulated services) are its two drivers.

Where AWS documents a behaviour, the module that models it cites the page once; where the docs are silent, the
model chooses once and says so.
"""
