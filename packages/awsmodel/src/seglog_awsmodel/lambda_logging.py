"""Lambda's advanced logging controls, as the template reader checks them and the worker applies them (standard
library only: the worker wrapper imports it)."""

from __future__ import annotations

import logging
from typing import Final

#: LoggingConfig.ApplicationLogLevel's values (AWS::Lambda::Function LoggingConfig) and the standard library's level
#: each means: Lambda maps TRACE to DEBUG and FATAL to CRITICAL.
APPLICATION_LOG_LEVELS: Final = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
                                 "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
