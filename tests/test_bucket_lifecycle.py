"""The snapshot bucket's versioning and lifecycle rules (template.yaml SnapshotBucket; issue 22 point 2) against the
keys the code writes, derived from the code's own key functions.

The bucket is versioned so that an overwritten or deleted archive (archive/, the only copy of the entries
retention removed from DynamoDB) can be restored for ArchiveNoncurrentVersionDays. Everything else the code writes
is rewritten or removed by design, so each of its prefixes needs a rule that removes noncurrent versions soon and
the delete markers left behind; and no rule may reach archive/ with a shorter expiry, since where rules overlap
"the shorter expiration policy is honored" (Amazon S3 User Guide, "How Amazon S3 handles conflicts in lifecycle
configurations", lifecycle-conflicts.html). Rules are matched as S3 matches them ("Lifecycle configuration
elements", intro-lifecycle-rules.html): a key prefix and every tag of the filter.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seglog_aws.s3_blob_store import DISCARDABLE_TAG
from seglog_awsmodel.template import Template, load_template
from seglog_cli.sheet_commands import import_key
from seglog_core.bodies import external_body_key
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.retention import CURSOR_KEY, RetentionPolicy, apply_retention, archive_key
from seglog_core.snapshot.format import chunk_key, root_key
from seglog_services.api.uploads import upload_key
from test_verify_retention import MemoryPipeline

REPO = Path(__file__).resolve().parent.parent
LOG, ENTRY = uuid.UUID(int=1), uuid.UUID(int=2)
DISCARDABLE = {"Key": DISCARDABLE_TAG, "Value": "true"}
GUARD = "ArchiveNoncurrentVersionDays"


@dataclass(frozen=True, kw_only=True)
class Written:
    """An object the code writes: where, and whether it may carry the discardable tag (then the ExpireDiscardable
    rule's expiration turns it into a noncurrent version that still carries the tag)."""

    what: str
    key: str
    discardable: bool = False


#: Every key the code writes, from the functions that build them (a new writer adds its key function here).
WRITTEN = (
    Written(what="snapshot chunk", key=chunk_key(LOG, 0, 0, 0)),
    Written(what="snapshot root", key=root_key(LOG, 0, 0)),
    Written(what="large body", key=external_body_key(LOG, ENTRY, b"body"), discardable=True),
    Written(what="archive", key=archive_key(LOG, 0)),
    Written(what="retention cursor", key=CURSOR_KEY),
    Written(what="API upload", key=upload_key(LOG, ENTRY), discardable=True),
    Written(what="CLI import", key=import_key(LOG, ENTRY, "sheet.csv")),
)
ARCHIVE = next(w for w in WRITTEN if w.what == "archive")


@dataclass(frozen=True)
class Problem:
    what: str
    key: str
    why: str


def top(key: str) -> str:
    return key.split("/", 1)[0] + "/"


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(REPO / "template.yaml")


def bucket(template: Template) -> dict[str, Any]:
    props: dict[str, Any] = template.resources["SnapshotBucket"]["Properties"]
    return props


def matching(rules: list[dict[str, Any]], key: str, tags: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The rules that apply to an object version with this key and these tags."""
    return [r for r in rules if key.startswith(r.get("Prefix", "")) and all(t in tags for t in r.get("TagFilters", []))]


def days(value: Any, parameters: dict[str, Any]) -> int:
    """A rule's number of days with the template's parameters at ``parameters``."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return int(parameters[value["Ref"]])
    return int(value)


def problems(template: Template) -> list[Problem]:
    """What in the bucket's rules fails the keys the code writes (nothing, for a right template)."""
    rules = bucket(template)["LifecycleConfiguration"]["Rules"]
    found = []
    for written in WRITTEN:
        # A delete marker has no tags; a noncurrent version has the tags its object had.
        for tags in ([[]] + ([[DISCARDABLE]] if written.discardable else [])):
            applying = matching(rules, written.key, tags)
            label = f"{written.what}{' (discardable)' if tags else ''}"
            if not any("NoncurrentVersionExpiration" in r for r in applying):
                found.append(Problem(label, written.key, "no rule removes its noncurrent versions"))
            if not tags and not any(r.get("ExpiredObjectDeleteMarker") is True for r in applying):
                found.append(Problem(label, written.key, "no rule removes its expired delete markers"))
    found.extend(archive_problems(template))
    return found


def archive_problems(template: Template) -> list[Problem]:
    """Rules that would remove an archive version sooner than the guard says, at any value it may be given."""
    declared = template.body["Parameters"][GUARD]
    rules = matching(bucket(template)["LifecycleConfiguration"]["Rules"], ARCHIVE.key, [])
    found = []
    for guard in (declared["MinValue"], declared["Default"], 10 * declared["Default"]):
        parameters = {**template.parameters, GUARD: guard}
        for rule in rules:
            noncurrent = rule.get("NoncurrentVersionExpiration")
            if noncurrent is not None and days(noncurrent["NoncurrentDays"], parameters) < guard:
                found.append(Problem("archive", ARCHIVE.key, f"{rule['Id']} removes old versions before "
                                                             f"{GUARD}={guard} days"))
    for rule in rules:
        if "ExpirationInDays" in rule or "ExpirationDate" in rule:
            found.append(Problem("archive", ARCHIVE.key, f"{rule['Id']} expires the current archive"))
    if not any(r.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays") == {"Ref": GUARD} for r in rules):
        found.append(Problem("archive", ARCHIVE.key, f"no rule keeps old versions for {GUARD}"))
    return list(dict.fromkeys(found))


def test_the_bucket_is_versioned_and_every_key_the_code_writes_is_covered(template: Template) -> None:
    """Versioning on, and for each key: its noncurrent versions removed by a rule (a discardable one's too, left
    by the tag rule's expiration) and its delete markers once nothing is left under them; archive/ only after the
    guard's days. If this fails, garbage versions pile up unbilled-for in no estimate, or archives lose their guard."""
    assert {"Status": "Enabled"} == bucket(template)["VersioningConfiguration"]
    assert [] == problems(template)


def test_the_discardable_rule_still_expires_what_no_entry_claimed(template: Template) -> None:
    """Versioning keeps the tag rule (DESIGN §3 large entries): an unclaimed body still expires, now to a noncurrent
    version that the prefix rules remove."""
    rules = {r["Id"]: r for r in bucket(template)["LifecycleConfiguration"]["Rules"]}
    assert {"Id": "ExpireDiscardable", "Status": "Enabled", "TagFilters": [DISCARDABLE],
            "ExpirationInDays": {"Ref": "DiscardableExpirationDays"}} == rules["ExpireDiscardable"]
    assert {"Enabled"} == {r["Status"] for r in rules.values()}


def test_the_archive_guard_is_a_parameter_of_at_least_a_day(template: Template) -> None:
    declared = template.body["Parameters"][GUARD]
    assert ("Number", 90, 1) == (declared["Type"], declared["Default"], declared["MinValue"])
    assert "restored" in declared["Description"]


def with_rules(template: Template, change: Any) -> Template:
    body = copy.deepcopy(template.body)
    rules = body["Resources"]["SnapshotBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    change(rules)
    return Template(path=template.path, body=body)


def test_a_bucket_wide_short_rule_is_caught_because_s3_honours_the_shorter_expiry(template: Template) -> None:
    """The mistake the per-prefix rules avoid: one rule without a filter cuts archive/'s guard to a day."""
    wide = with_rules(template, lambda rules: rules.append(
        {"Id": "Everything", "Status": "Enabled", "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}))
    assert [Problem("archive", ARCHIVE.key, "Everything removes old versions before "
                                            f"{GUARD}={guard} days") for guard in (90, 900)] == problems(wide)


def test_a_fixed_number_of_days_on_archive_is_caught_when_the_guard_is_set_higher(template: Template) -> None:
    fixed = with_rules(template, lambda rules: [r["NoncurrentVersionExpiration"].update(NoncurrentDays=90)
                                                for r in rules if r["Id"] == "KeepArchiveVersions"])
    assert [Problem("archive", ARCHIVE.key, f"KeepArchiveVersions removes old versions before {GUARD}=900 days"),
            Problem("archive", ARCHIVE.key, f"no rule keeps old versions for {GUARD}")] == problems(fixed)


def test_a_prefix_without_its_rule_is_caught(template: Template) -> None:
    gone = with_rules(template, lambda rules: rules.remove(next(r for r in rules if r.get("Prefix") == "snapshots/")))
    assert {("snapshot chunk", "no rule removes its noncurrent versions"),
            ("snapshot root", "no rule removes its noncurrent versions"),
            ("snapshot chunk", "no rule removes its expired delete markers"),
            ("snapshot root", "no rule removes its expired delete markers")} == {(p.what, p.why)
                                                                                for p in problems(gone)}


class RecordingBlobStore(InMemoryBlobStore):
    """The in-memory bucket, remembering every key ever written (a later delete does not hide it)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: set[str] = set()

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        self.written.add(key)
        super().put(key, data, discardable=discardable, content_type=content_type)

    def put_if_absent(self, key: str, data: bytes, *, discardable: bool = False) -> bool:
        self.written.add(key)
        return super().put_if_absent(key, data, discardable=discardable)

    def prefixes(self) -> Iterator[str]:
        yield from sorted({top(key) for key in self.written})


def test_a_log_run_through_snapshots_large_bodies_and_retention_writes_only_listed_prefixes() -> None:
    """The list above is complete for the core's writers: a log with large bodies, its snapshots built by the
    worker, then archived in part, writes under no prefix the list lacks."""
    blobs = RecordingBlobStore()
    p = MemoryPipeline(large_threshold=128, stores=(InMemoryLogStore(), blobs))
    assert apply_retention(p.store, p.blobs, p.log_id, RetentionPolicy(keep=2))
    assert {"archive/", "entries/", "snapshots/"} <= set(blobs.prefixes())  # the run did write each kind
    assert set(blobs.prefixes()) <= {top(w.key) for w in WRITTEN}
