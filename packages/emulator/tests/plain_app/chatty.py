"""A handler that logs at every level and leaves the level to the runtime (LoggingConfig), as Lambda's advanced
logging controls expect."""

import logging

logger = logging.getLogger("chatty")


def handler(event, context):
    logger.debug("debug %s", event["n"])
    logger.info("info %s", event["n"], extra={"order": "o-1"})
    try:
        raise ValueError("no stock")
    except ValueError:
        logger.exception("failed")
    return "ok"
