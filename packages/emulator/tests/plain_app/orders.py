"""An ordinary Lambda handler, nothing of seglog's: the SDK from the runtime, the standard library's logging, and
a metric printed in embedded metric format (test_plain_handler.py runs it)."""

import json
import logging
import sys

import boto3

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def handler(event, context):
    logger.info("order %s received", event["order"])
    print(json.dumps({"_aws": {"Timestamp": 0, "CloudWatchMetrics": [{
        "Namespace": "Orders", "Dimensions": [["Service"]], "Metrics": [{"Name": "Received", "Unit": "Count"}]}]},
        "Service": "orders", "Received": 1}))
    absent = {}
    for name in ("structlog", "seglog_core", "seglog_aws", "seglog_services", "yaml"):
        try:
            __import__(name)
            absent[name] = False
        except ImportError:
            absent[name] = True
    return {"order": event["order"], "boto3": boto3.__file__, "absent": absent,
            "loaded": sorted({m.split(".")[0] for m in sys.modules} & {"structlog", "seglog_core", "seglog_aws"}),
            "request_id": context.aws_request_id}


def slow_print(event, context):
    """Sleeps, then writes two lines (test_plain_handler.py kills its invoker meanwhile)."""
    import time

    time.sleep(event["seconds"])
    print("printed after the invoker died")
    logger.warning("logged after the invoker died")
    return "done"


def echo(event, context):
    return event
