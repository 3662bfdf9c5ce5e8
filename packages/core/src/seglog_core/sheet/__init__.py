"""The spreadsheet document model: references, the fold, rendering and importers.

The fold (:func:`fold`, :meth:`Sheet.apply`) defines what a log means; everything else here turns user input
into entry bodies (:func:`parse_assignment`, :func:`read_import`, :func:`validate_body`) or a sheet into text
(:func:`render`). Pure Python: no I/O, no AWS.
"""

from __future__ import annotations

from seglog_core.sheet.importers import DEFAULT_LIMITS, FORMATS, ImportLimits, read_import
from seglog_core.sheet.model import SHEET_FORMAT_VERSION, Sheet, fold
from seglog_core.sheet.refs import (
    MAX_CELL_BYTES,
    MAX_COL,
    MAX_INT,
    MAX_ROW,
    MIN_INT,
    check_value,
    column_letters,
    column_number,
    format_ref,
    parse_assignment,
    parse_ref,
    parse_value,
)
from seglog_core.sheet.render import display_value, render
from seglog_core.sheet.validate import validate_body

__all__ = [
    "DEFAULT_LIMITS",
    "FORMATS",
    "MAX_CELL_BYTES",
    "MAX_COL",
    "MAX_INT",
    "MAX_ROW",
    "MIN_INT",
    "SHEET_FORMAT_VERSION",
    "ImportLimits",
    "Sheet",
    "check_value",
    "column_letters",
    "column_number",
    "display_value",
    "fold",
    "format_ref",
    "parse_assignment",
    "parse_ref",
    "parse_value",
    "read_import",
    "render",
    "validate_body",
]
