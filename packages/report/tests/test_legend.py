"""The one visual language (issue 21, point 1): every fault kind of the catalogue and every outcome has a style,
shapes are never shared, colours come from the colour-blind-safe palette, and report.json carries the tables."""

from __future__ import annotations

import msgspec

from seglog_awsmodel.faults import FaultKind
from seglog_core.pipeline.outcomes import Outcome
from seglog_report import legend
from seglog_report.model import SCHEMA, Report, decode, encode

PALETTE = {legend.BLACK, legend.ORANGE, legend.SKY, legend.GREEN, legend.YELLOW, legend.BLUE, legend.VERMILLION,
           legend.PURPLE, legend.GREY}


def test_every_fault_kind_of_the_catalogue_has_a_style_of_its_own() -> None:
    missing = [kind for kind in FaultKind if kind not in legend.FAULTS]
    assert missing == [], f"give {missing} a style in seglog_report.legend.FAULTS"
    symbols = [style.symbol for style in legend.FAULTS.values()] + [legend.UNKNOWN_MARKER.symbol]
    assert len(symbols) == len(set(symbols)), "two marker kinds share a symbol"
    assert {style.color for style in legend.FAULTS.values()} <= PALETTE
    assert {style.color for style in legend.FAULTS.values()} <= set(legend.FAMILIES)


def test_every_outcome_has_a_look_no_other_has() -> None:
    assert {str(o) for o in Outcome} <= set(legend.OUTCOMES)
    looks = [(s.color, s.pattern) for s in legend.OUTCOMES.values()] + [
        (legend.UNKNOWN_OUTCOME.color, legend.UNKNOWN_OUTCOME.pattern)]
    assert len(looks) == len(set(looks))
    assert {s.color for s in legend.OUTCOMES.values()} <= PALETTE


def test_a_kind_this_build_does_not_know_is_drawn_apart_from_every_known_one() -> None:
    assert legend.marker("made_up_fault") == legend.UNKNOWN_MARKER
    assert legend.outcome("made_up") == legend.UNKNOWN_OUTCOME
    assert legend.outcome_rank("made_up") == len(legend.OUTCOMES)


def test_report_json_carries_its_schema_and_the_legend() -> None:
    data = msgspec.json.decode(encode(Report(kind="chaos", title="t", command="c", created_at=0.0)))
    assert data["schema"] == SCHEMA
    assert data["legend"]["faults"]["ddb_5xx"] == {"symbol": "cross", "color": legend.BLUE}
    assert data["legend"]["outcomes"]["completed"] == {"color": legend.GREEN, "pattern": "/"}
    assert decode(encode(Report(kind="chaos", title="t", command="c", created_at=0.0))).schema == SCHEMA
