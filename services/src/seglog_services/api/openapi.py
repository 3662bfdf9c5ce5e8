"""The API's OpenAPI 3.1 document, written as data next to the routes it describes.

A test walks the resolver's routes and checks each one is here, so the two cannot drift apart silently.
JSON Schema 2020-12 is OpenAPI 3.1's schema dialect: ``type: [..., "null"]`` for nullable values.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from seglog_core.bodies import MAX_BODY
from seglog_core.schema import MAX_EDITS, MAX_EDITS_BYTES, MAX_NUM
from seglog_core.sheet import MAX_CELL_BYTES
from seglog_core.sheet.refs import MAX_COL, MAX_INT, MAX_ROW, MIN_INT, column_letters
from seglog_services.api.pages import CURSOR_PATTERN
from seglog_services.api.patterns import letters_at_most, number_at_most
from seglog_services.api.schemas import SheetCreated
from seglog_services.api.uploads import content_type_pattern

VERSION: Final = "0.1.0"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {400: "The request does not match this document: malformed JSON, unknown fields, wrong types, values "
                 "out of the ranges and patterns given here; `error.message` names the field",
            404: "No such sheet (or upload)",
            409: "`version_conflict`: `error.entry` holds the expected position; `unknown_position`: the log holds "
                 "no entry at `since` (a sync's `segment`/`after`, a page's cursor): load again",
            410: "`since_retired`: `since` is in history retention deleted and the entry is not in the retained "
                 "log. If the entry's first try was less than `error.horizon_seconds` ago, send it again with the "
                 "same `entry_id` and `since` = `error.position`; otherwise do not resend it (its outcome cannot "
                 "be known)",
            413: "Payload too large: over 1 MB the function answers (send large entries as uploads); over API "
                 "Gateway's 10 MB quota the gateway does, with `message`",
            415: "Content type not accepted. `unsupported_media_type`: a request body is JSON sent with "
                 "`Content-Type: application/json` (parameters such as `charset` aside; no other type, "
                 "`application/*+json` neither); `unsupported_content_type`: an upload's `content_type` is not one "
                 "`UploadRequest` lists",
            422: "The request matches this document and still cannot be applied; nothing was written. "
                 "`entry_id_reused`: the entry id already names another entry (other type, version or body), at "
                 "`error.position`: do not retry, give a new entry a new entry id. `does_not_fit`: the sheet "
                 "cannot take the entry (a range running past column XFD or row 1,048,576, a text over 32 KB of "
                 "UTF-8): make it smaller or write it in parts; in a batch, `error.edit` is the index of the edit "
                 "that does not fit and none of the batch was written. `batch_too_large`: an `edits` entry "
                 f"encodes to more than {MAX_EDITS_BYTES} bytes (`error.size`, `error.limit`): split it into "
                 "smaller batches (each its own entry id). An upload's completion: `content_type_mismatch` "
                 "(the upload's content type cannot become an entry of `type`), `invalid_upload` (the JSON is not "
                 "a range), `invalid_import` (the file does not read as CSV or XLSX): upload the data again",
            503: "Storage unavailable or contended: after `Retry-After` seconds send the identical request again"}
    return {"403": _json(_ref("GatewayError"), "From API Gateway: the request is not signed with SigV4, or its "
                                               "signature, credentials or permission (execute-api:Invoke) are "
                                               "refused"),
            **{str(s): _json(_ref("Error") if s != 413 else {"anyOf": [_ref("Error"), _ref("GatewayError")]},
                             text[s]) for s in statuses}}


LOG_ID: Final = {"name": "log_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
CELL: Final = {"anyOf": [{"type": "string", "maxLength": MAX_CELL_BYTES},
                         {"type": "integer", "minimum": MIN_INT, "maximum": MAX_INT},
                         {"type": "number", "not": {"type": "integer"}}, {"type": "boolean"}, {"type": "null"}],
               "description": f"A cell value: text of at most {MAX_CELL_BYTES} characters and {MAX_CELL_BYTES} "
                              "bytes of UTF-8 (over that in bytes: 422 `does_not_fit`), an integer in 64 bits, "
                              "a number, true or false, or null (an empty cell)."}
#: A row from column A (or from the range's first column: past XFD is 422 `does_not_fit`).
ROW: Final = {"type": "array", "items": CELL, "maxItems": MAX_COL}
ROWS: Final = {"type": "array", "items": ROW, "maxItems": MAX_ROW}
#: A cell reference exactly as the API accepts it: a column A..XFD in either case, then a row 1..1,048,576.
REF: Final = {"type": "string", "examples": ["A1", "BC12"],
              "pattern": f"^{letters_at_most(column_letters(MAX_COL))}{number_at_most(MAX_ROW, minimum=1)}$"}
NUM: Final = {"type": "integer", "minimum": 0, "maximum": MAX_NUM}
POSITION: Final = {"type": "object", "required": ["segment", "num"],
                   "properties": {"segment": NUM, "num": NUM}}
#: A request's position: as it is decoded, unknown fields refused.
POSITION_IN: Final = {**POSITION, "additionalProperties": False}
#: What API Gateway itself answers before the function (signature refused, payload over its quota).
GATEWAY: Final = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}

#: A load's ``next`` as the API makes it (seglog_services.api.pages.LoadCursor).
CURSOR: Final = {"type": "string", "pattern": CURSOR_PATTERN,
                 "description": "Opaque: the `next` of the previous page, as it was given."}

EDITS: Final = (
    f"Batched edits: up to {MAX_EDITS} edits in one entry, applied in order and atomically (all of them, or, "
    "refused, none), under one `entry_id`, one `since` and one answered position, with the same exactly-once "
    "protocol as a single edit: a retry sends the identical batch. A bad edit refuses the whole batch (400, or "
    "422 `does_not_fit`), with `error.edit` its 0-based index. The batch is stored in msgpack; past "
    f"{MAX_EDITS_BYTES} bytes encoded it is refused with 422 `batch_too_large`, so every batch stays one "
    "1 KB write (one WRU): split a refused batch and send each part as an entry of its own (seglog_client's "
    "batcher does).")

RETRY_PROTOCOL: Final = (
    "Appending exactly once. First try: a new UUID as `entry_id`, and as `since` the `position` of the last "
    "answer you had (create, append, load or sync). Lost answer, timeout or 5xx: send the identical request again, "
    "at any time — even while the first try may still run. The server reads the log forward from `since` with "
    "consistent reads and writes only with a conditional put after what it read, so two tries of one entry id can "
    "never both be stored; a retry whose first try landed answers `deduplicated: true`. An entry id names one "
    "entry: a request that reuses it with another entry is refused with 422 `entry_id_reused`, and a stored entry, "
    "its body in S3 included, never changes. A request without `entry_id`, or without `since` (or `expected`), is "
    "refused with 400. Retry horizon: retention keeps every "
    "segment at least RetentionMinAgeSeconds (the deployment's template parameter, default 7 days) after it "
    "closed, so any try that landed less than that ago is found. A retry whose `since` retention archived is "
    "answered as above; one whose `since` it deleted is answered with the entry when the retained log holds it, "
    "else refused with 410 `since_retired` (see that response): never a second copy.")

#: The answers the routes encode from structs (seglog_services.api.schemas), described by those structs.
_ANSWERS, GENERATED = msgspec.json.schema_components([SheetCreated], ref_template="#/components/schemas/{name}")

SCHEMAS: Final[dict[str, Any]] = {
    **GENERATED,
    "GatewayError": GATEWAY,
    "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["code", "message"],
            "properties": {"code": {"type": "string"},
                           "message": {"type": "string", "description": "What is wrong and what to do."},
                           "entry": _ref("EntryRef")},
            "additionalProperties": True}},
    },
    "EntryRef": {"type": "object", "required": ["segment", "num"],
                 "properties": {"segment": NUM, "num": NUM, "type": {"type": "string"},
                                "entry_id": {"type": ["string", "null"], "format": "uuid"}}},
    "SetCell": {"type": "object", "additionalProperties": False, "required": ["type", "ref", "value"],
                "properties": {"type": {"const": "set"}, "ref": REF, "value": CELL}},
    "SetRange": {"type": "object", "additionalProperties": False, "required": ["type", "ref", "values"],
                 "properties": {"type": {"const": "setrng"}, "ref": REF, "values": ROWS}},
    "InsertRow": {"type": "object", "additionalProperties": False, "required": ["type", "after"],
                  "properties": {"type": {"const": "insrow"},
                                 "after": {"type": "integer", "minimum": 0, "maximum": MAX_ROW - 1},
                                 "values": ROW}},
    "DeleteRow": {"type": "object", "additionalProperties": False, "required": ["type", "row"],
                  "properties": {"type": {"const": "delrow"},
                                 "row": {"type": "integer", "minimum": 1, "maximum": MAX_ROW}}},
    "Edit": {"oneOf": [_ref("SetCell"), _ref("SetRange"), _ref("InsertRow"), _ref("DeleteRow")],
             "discriminator": {"propertyName": "type"}},
    "Edits": {"type": "object", "additionalProperties": False, "required": ["type", "edits"],
              "description": EDITS,
              "properties": {"type": {"const": "edits"},
                             "edits": {"type": "array", "items": _ref("Edit"), "minItems": 1,
                                       "maxItems": MAX_EDITS}}},
    "EntryBody": {"oneOf": [_ref("SetCell"), _ref("SetRange"), _ref("InsertRow"), _ref("DeleteRow"),
                            _ref("Edits")],
                  "discriminator": {"propertyName": "type"}},
    "AppendRequest": {
        "type": "object", "additionalProperties": False, "required": ["entry", "entry_id"],
        "description": RETRY_PROTOCOL,
        "oneOf": [{"required": ["since"]}, {"required": ["expected"]}],
        "properties": {
            "entry": _ref("EntryBody"),
            "entry_id": {"type": "string", "format": "uuid",
                         "description": "Made once per entry by the client and sent on every try of it."},
            "since": {**POSITION_IN, "description": "The `position` of the last answer the client had before this "
                                                 "entry's first try (a new sheet's is 0/0); the same on every try."},
            "expected": {**POSITION_IN, "properties": {"segment": NUM, "num": {**NUM, "minimum": 1}},
                         "description": "Instead of `since`: the exact position the entry must take (num 0 of a "
                                        "segment is its Snapshot entry, so num is 1 or more); "
                                                    "409 `version_conflict` with the holder when it is taken. It "
                                                    "costs what `since` costs: one consistent Query from the entry "
                                                    "before `expected` plus the conditional PutItem (1 RRU + 1 WRU "
                                                    "for entries up to 1 KB), since the server must check that "
                                                    "position and the entry id's earlier tries."},
        },
    },
    "Appended": {
        "type": "object", "required": ["segment", "num", "entry_id", "deduplicated", "attempts"],
        "properties": {"segment": NUM, "num": NUM, "entry_id": {"type": "string", "format": "uuid"},
                       "position": {**POSITION, "description": "The entry's position: the next `since`."},
                       "deduplicated": {"type": "boolean", "description": "An earlier try had stored it."},
                       "attempts": {"type": "integer", "minimum": 1},
                       "external": {"type": "string", "description": "S3 key of the body, when stored there"},
                       "upload_id": {"type": "string", "format": "uuid"}},
    },
    "Entry": {
        "type": "object", "required": ["segment", "num", "type", "entry_id", "created"],
        "properties": {
            "segment": NUM, "num": NUM,
            "type": {"type": "string",
                     "enum": ["snap", "end", "imp", "insrow", "delrow", "set", "setrng", "edits"]},
            "entry_id": {"type": ["string", "null"], "format": "uuid"},
            "created": {"type": "integer", "description": "Epoch seconds."},
            "body": {"type": "object", "description": "The body's fields (set/setrng also carry `ref`; an `edits` "
                                                    "entry's body is `{\"edits\": [...]}`, each edit a body with "
                                                    "its `type`)."},
            "external": {"type": "string", "description": "S3 key of a body too large to send inline; "
                                                          "GET /sheets/{log_id} folds it in."},
            "root": {"type": "string", "description": "Snapshot entries: the root of the completed snapshot."},
        },
    },
    "Sheet": {
        "type": "object", "required": ["snapshot", "rows", "position", "row", "col", "next"],
        "description": "One page of a load (each page under 4 MB, so under Lambda's 6 MB response limit). Every "
                       "page of one load shows the same state: the snapshot and position of its first page.",
        "properties": {
            "snapshot": {"type": "object", "required": ["segment", "num", "root"],
                         "properties": {"segment": NUM, "num": NUM, "root": {"type": ["string", "null"]}}},
            "row": {"type": "integer", "minimum": 1, "description": "The row number of `rows[0]`."},
            "col": {"type": "integer", "minimum": 1,
                    "description": "1, or: `rows[0]` continues the previous page's last row from this column."},
            "rows": {**ROWS, "description": "Rows from `row`, each from column A; trailing empty cells left out."},
            "position": POSITION,
            "next": {"type": ["string", "null"], "description": "Cursor of the next page (`?cursor=`); null: last."},
        },
    },
    "Sync": {
        "type": "object", "required": ["reload"],
        "properties": {"reload": {"type": "boolean",
                                  "description": "true: the client fell behind both latest segments; load again"},
                       "entries": {"type": "array", "items": _ref("Entry")}, "position": POSITION,
                       "more": {"type": "boolean", "description": "true: ask again from `position` for the rest"}},
    },
    "SnapshotStatus": {
        "type": "object", "required": ["latest", "segments", "pending"],
        "properties": {
            "latest": {"oneOf": [POSITION, {"type": "null"}]},
            "segments": {"type": "array", "items": {
                "type": "object", "required": ["segment", "created", "last_snapshot"],
                "properties": {"segment": NUM, "created": {"type": "integer"},
                               "last_snapshot": {"type": ["integer", "null"]},
                               "archive": {"type": ["string", "null"]},
                               "retired": {"type": ["integer", "null"],
                                           "description": "When retention deleted its entries (epoch s)."}}}},
            "pending": {"type": "array", "items": {
                "type": "object", "required": ["segment", "entry", "retries", "active", "modified"],
                "properties": {"segment": NUM, "entry": NUM, "retries": NUM, "active": {"type": "boolean"},
                               "created": {"type": "integer"}, "modified": {"type": "integer"}}}},
        },
    },
    "UploadRequest": {
        "type": "object", "additionalProperties": False, "required": ["size", "content_type"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": MAX_BODY},
            "content_type": {"type": "string", "pattern": content_type_pattern(),
                             "description": "application/json (a setrng body), text/csv or XLSX (an import); "
                                            "any case, parameters after `;` ignored."},
        },
    },
    "Upload": {
        "type": "object", "required": ["upload_id", "key", "url", "method", "headers", "expires_in"],
        "properties": {
            "upload_id": {"type": "string", "format": "uuid"}, "key": {"type": "string"},
            "url": {"type": "string", "format": "uri", "description": "Presigned S3 PUT URL."},
            "method": {"const": "PUT"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "Send exactly these headers with the PUT (they are signed). The URL "
                                       "writes once (`If-None-Match: *`): S3 answers a second PUT 412 "
                                       "PreconditionFailed and keeps the first upload."},
            "expires_in": {"type": "integer", "maximum": 900},
        },
    },
    "CompleteRequest": {
        "type": "object", "additionalProperties": False, "required": ["type", "since"],
        "properties": {
            "type": {"type": "string", "enum": ["imp", "setrng"],
                     "description": "imp: the upload is CSV or XLSX; setrng: JSON {\"ref\", \"values\"}."},
            "entry_id": {"type": "string", "format": "uuid",
                         "description": "Defaults to a UUIDv5 of the upload id (a retried completion is one entry)."},
            "since": {**POSITION_IN, "description": "Required, as for appends."},
        },
    },
}

def _links(**targets: dict[str, str]) -> dict[str, Any]:
    """OpenAPI links from a response to the operations it leads to (``operationId`` -> parameters)."""
    return {"links": {f"{op[0].upper()}{op[1:]}": {"operationId": op, "parameters": params}
                      for op, params in targets.items()}}


_SHEET: Final = {"log_id": "$response.body#/log_id"}
_SAME_SHEET: Final = {"log_id": "$request.path.log_id"}
#: Where a create's answer leads, new sheet (201) or existing (200) alike.
_CREATED_LINKS: Final = _links(loadSheet=_SHEET, appendEntry=_SHEET, snapshotStatus=_SHEET, startUpload=_SHEET,
                               syncEntries={**_SHEET, "segment": "$response.body#/position/segment",
                                            "after": "$response.body#/position/num"})

PATHS: Final[dict[str, Any]] = {
    "/sheets": {"post": {
        "operationId": "createSheet", "summary": "Create a sheet (a new log)",
        "requestBody": {"required": False, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": False}}}},
        "responses": {"201": {**_json(_ref("SheetCreated"), "Created: `created` is true"), **_CREATED_LINKS},
                      "200": {**_json(_ref("SheetCreated"), "A sheet with the client's `log_id` existed (a retried "
                                                            "create): `created` is false, nothing was created"),
                              **_CREATED_LINKS},
                      **_errors(400, 413, 415, 503)},
    }},
    "/sheets/{log_id}": {"get": {
        "operationId": "loadSheet", "summary": "Load: the latest snapshot folded with the entries after it",
        "parameters": [LOG_ID, {"name": "cursor", "in": "query", "required": False, "schema": CURSOR,
                                "description": "The `next` of the previous page."}],
        "responses": {"200": _json(_ref("Sheet"), "A page of the sheet"), **_errors(400, 404, 409, 503)},
    }},
    "/sheets/{log_id}/entries": {
        "post": {
            "operationId": "appendEntry", "summary": "Append an entry",
            "parameters": [LOG_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("AppendRequest")}}},
            "responses": {"200": {**_json(_ref("Appended"), "Appended (or found already appended)"),
                                  **_links(syncEntries={**_SAME_SHEET, "segment": "$response.body#/segment",
                                                        "after": "$response.body#/num"},
                                           loadSheet=_SAME_SHEET)},
                          **_errors(400, 404, 409, 410, 413, 415, 422, 503)},
        },
        "get": {
            "operationId": "syncEntries", "summary": "Sync: the entries after a position",
            "parameters": [LOG_ID,
                           {"name": "segment", "in": "query", "required": True, "schema": NUM},
                           {"name": "after", "in": "query", "required": True, "schema": NUM},
                           {"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}],
            "responses": {"200": _json(_ref("Sync"), "New entries, or reload"), **_errors(400, 404, 409, 503)},
        },
    },
    "/sheets/{log_id}/snapshots": {"get": {
        "operationId": "snapshotStatus", "summary": "Completed snapshots per segment and pending builds",
        "parameters": [LOG_ID],
        "responses": {"200": _json(_ref("SnapshotStatus"), "Snapshot status"), **_errors(400, 404, 503)},
    }},
    "/sheets/{log_id}/uploads": {"post": {
        "operationId": "startUpload", "summary": "Large entry, step 1: a presigned S3 PUT URL",
        "description": "Step 2: PUT the bytes to `url` with `headers`. Step 3: POST .../complete.",
        "parameters": [LOG_ID],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("UploadRequest")}}},
        "responses": {"201": {**_json(_ref("Upload"), "Presigned upload"),
                              **_links(completeUpload={**_SAME_SHEET, "upload_id": "$response.body#/upload_id"})},
                      **_errors(400, 404, 413, 415, 503)},
    }},
    "/sheets/{log_id}/uploads/{upload_id}/complete": {"post": {
        "operationId": "completeUpload", "summary": "Large entry, step 3: append the uploaded body",
        "parameters": [LOG_ID, {"name": "upload_id", "in": "path", "required": True,
                                "schema": {"type": "string", "format": "uuid"}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("CompleteRequest")}}},
        "responses": {"200": _json(_ref("Appended"), "Appended, body in S3"),
                      **_errors(400, 404, 409, 410, 413, 415, 422, 503)},
    }},
    "/openapi.json": {"get": {
        "operationId": "openapi", "summary": "This document",
        "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1 document"), **_errors()},
    }},
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "seglog sheets API", "version": VERSION,
                 "description": "An append-only, gap-free event log per spreadsheet (DESIGN §1, §3)."},
        "paths": PATHS,
        # Every route takes IAM authorization: requests are signed with SigV4 (service execute-api). This is how
        # API Gateway itself writes it (Developer Guide, "x-amazon-apigateway-authtype property").
        "security": [{"sigv4": []}],
        "components": {"schemas": SCHEMAS, "securitySchemes": {"sigv4": {
            "type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4",
            "description": "AWS Signature Version 4 for service execute-api (with X-Amz-Date, and "
                           "X-Amz-Security-Token for temporary credentials)."}}},
    }
