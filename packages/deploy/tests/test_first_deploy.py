"""A first deploy without friction (issue 22, point 4), each check a thing a new user tripped on:

* a local endpoint without a region deploys to the local stack's region and says so; AWS without one is a clear
  error naming --region and AWS_REGION;
* SAM CLI finds the stack name, capabilities and artifact bucket in samconfig.toml, so a bare `sam deploy` runs;
* the removal commands destroy prints reach the target destroy used (endpoint, region, profile), and say what the
  bucket really is (its versioning is read, not assumed);
* the deploy's last lines give a smoke command that works for the target (LocalStack has no HTTP API);
* smoke's defaults reach a snapshot wherever they point, and a run that builds none fails.

The smoke runs here on in-memory stores: the "API" appends through the core's EventLog with the deployment's
SnapshotEvery (the policy the API function applies), and the "pipeline" untags large bodies and completes snapshots
with the core's rebuild whenever smoke waits. LocalStack checks of the region default and of destroy's commands,
run as printed, are in tests/deploy/test_deploy_localstack.py.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pytest
from botocore.stub import Stubber

from seglog_aws.backend import Backend
from seglog_client import SeglogClient
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline.fallback import rebuild
from seglog_core.reader import LogReader
from seglog_deploy.errors import TargetError
from seglog_deploy.leftovers import removal
from seglog_deploy.record import StackRecord
from seglog_deploy.sam_cli import SamCli
from seglog_deploy.target import Target, is_local_endpoint
from seglog_deploy.toolchain import Toolchain
from seglog_plugin import smoke
from seglog_services.api.schemas import EntryIn, to_body

WORKSPACE = Path(__file__).resolve().parents[3]
LOCAL = "http://127.0.0.1:4566"


@pytest.fixture
def no_aws_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No region and no credentials anywhere: the state of a fresh machine."""
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


# ------------------------------------------------------------------------------------------------ the region


def test_a_local_endpoint_without_a_region_uses_the_local_stacks_and_says_so(no_aws_config: Path) -> None:
    target = Target.resolve(endpoint_url=LOCAL, env={}, base=no_aws_config)
    assert "us-east-1" == target.region == target.session.region_name
    assert target.region_note is not None and "\n" not in target.region_note
    assert "no AWS region configured: using us-east-1" in target.region_note
    assert target.dummy_credentials  # none configured: LocalStack's


def test_the_region_a_recorded_local_stack_uses_is_the_default_for_its_endpoint(no_aws_config: Path) -> None:
    record = no_aws_config / ".seglog" / "localstack" / "deployment.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"profile": "localstack", "region": "eu-central-1",
                                  "endpoints": {"s3": "http://localhost:4566", "sqs": "http://localhost:4566"}}))
    target = Target.resolve(endpoint_url=LOCAL, env={}, base=no_aws_config)
    assert "eu-central-1" == target.region
    assert target.region_note is not None and str(record) in target.region_note
    # Any other local endpoint: the stack config's default.
    assert "us-east-1" == Target.resolve(endpoint_url="http://localhost:4599", env={}, base=no_aws_config).region


def test_a_configured_region_wins_and_is_not_remarked_on(no_aws_config: Path) -> None:
    target = Target.resolve(endpoint_url=LOCAL, env={"AWS_REGION": "ap-south-1"}, base=no_aws_config)
    assert ("ap-south-1", None) == (target.region, target.region_note)


@pytest.mark.parametrize("endpoint", [None, "https://vpce-0abc.cloudformation.eu-west-1.vpce.amazonaws.com"])
def test_aws_without_a_region_is_a_clear_error(no_aws_config: Path, endpoint: str | None) -> None:
    with pytest.raises(TargetError) as raised:
        Target.resolve(endpoint_url=endpoint, env={}, base=no_aws_config)
    assert "pass --region, or set AWS_REGION" in str(raised.value)
    if endpoint:
        assert "not a local stack's" in str(raised.value)


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:4566", True), ("http://localhost:4566", True), ("http://[::1]:4566", True),
    ("http://localhost.localstack.cloud:4566", True), ("http://s3.localhost.localstack.cloud:4566", True),
    ("http://localstack:4566", True), ("https://cloudformation.eu-west-1.amazonaws.com", False),
    ("http://10.0.0.7:4566", False),
])
def test_which_endpoints_are_local(url: str, local: bool, tmp_path: Path) -> None:
    assert local == is_local_endpoint(url, tmp_path)


# ------------------------------------------------------------------------------------------------ samconfig.toml

#: Runs in SAM CLI's own venv: parse `sam deploy` (no arguments) as SAM CLI does, samconfig.toml included.
SAM_DEPLOY_PARAMS = """
import json, os
from samcli.commands.deploy.command import cli
ctx = cli.make_context("deploy", [])
print(json.dumps({k: ctx.params.get(k) for k in ("stack_name", "capabilities", "resolve_s3", "confirm_changeset",
                                                 "region", "s3_bucket")}))
"""


def _sam_deploy(sam: SamCli, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(sam.venv / "bin" / "python"), "-c", SAM_DEPLOY_PARAMS], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={"SAM_CLI_TELEMETRY": "0", "HOME": str(cwd), "PATH": ""})


def test_sam_cli_reads_the_stack_name_capabilities_and_bucket_of_a_bare_sam_deploy(tmp_path: Path) -> None:
    """SAM CLI's own command parser, run in its venv beside template.yaml, finds what `sam deploy` needs in
    samconfig.toml; the same template without the file stops where users stopped (no --stack-name)."""
    sam = SamCli(Toolchain.find(WORKSPACE, "3.13"))
    sam.ensure()
    done = _sam_deploy(sam, WORKSPACE)
    assert 0 == done.returncode, done.stderr[-2000:]
    params = json.loads(done.stdout.strip().splitlines()[-1])
    assert "seglog" == params["stack_name"]
    assert ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"] == params["capabilities"]
    assert (True, True) == (params["resolve_s3"], params["confirm_changeset"])
    assert None is params["region"]  # left to --region, AWS_REGION or the profile, as the file says
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "template.yaml").write_text((WORKSPACE / "template.yaml").read_text())
    done = _sam_deploy(sam, bare)
    assert 0 != done.returncode and "Missing option '--stack-name'" in done.stderr


def test_the_readme_says_a_bare_sam_deploy() -> None:
    readme = (WORKSPACE / "README.md").read_text()
    assert "`sam build && sam deploy`" in readme and "samconfig.toml" in readme


# ------------------------------------------------------------------------------------------------ destroy's commands


def _local_target(no_aws_config: Path, *, profile: str | None = None) -> Target:
    if profile:
        (no_aws_config / "no-config").write_text(f"[profile {profile}]\nregion = eu-west-1\n")
        (no_aws_config / "no-credentials").write_text(f"[{profile}]\naws_access_key_id = AKIAEXAMPLE\n"
                                                      "aws_secret_access_key = secret\n")
    return Target.resolve(endpoint_url=LOCAL, profile=profile, env={}, base=no_aws_config)


def _words(command: str) -> list[str]:
    return shlex.split(command.split("  #")[0])


def test_removal_commands_carry_the_endpoint_region_and_the_dummy_credentials(no_aws_config: Path) -> None:
    target = _local_target(no_aws_config)
    table = _words(removal(target, "AWS::DynamoDB::Table", "s-EntriesTable-1"))
    assert ["AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "aws", "dynamodb", "delete-table"] == table[:5]
    assert ["--region", "us-east-1", "--endpoint-url", LOCAL] == table[-4:]
    logs = _words(removal(target, "AWS::Logs::LogGroup", "/aws/lambda/f"))
    assert ["--log-group-name", "/aws/lambda/f", "--region", "us-east-1", "--endpoint-url", LOCAL] == logs[-6:]


def test_removal_commands_carry_the_profile_and_its_region(no_aws_config: Path) -> None:
    target = _local_target(no_aws_config, profile="dev")
    words = _words(removal(target, "AWS::SQS::Queue", "http://q/1"))
    assert "aws" == words[0]  # the profile's own credentials
    assert ["--region", "eu-west-1", "--endpoint-url", LOCAL, "--profile", "dev"] == words[-6:]
    aws = Target.resolve(region="eu-west-2", profile="dev", env={}, base=no_aws_config)
    words = _words(removal(aws, "AWS::DynamoDB::Table", "t"))
    assert "--endpoint-url" not in words and ["--region", "eu-west-2", "--profile", "dev"] == words[-4:]


@pytest.mark.parametrize(("status", "said"), [(None, "not versioned"), ("Enabled", "versioned"),
                                              ("Suspended", "versioning suspended")])
def test_a_buckets_removal_says_what_its_versioning_is(no_aws_config: Path, status: str | None, said: str) -> None:
    target = _local_target(no_aws_config)
    s3 = target.client("s3")
    with Stubber(s3) as stub:
        stub.add_response("get_bucket_versioning", {"Status": status} if status else {}, {"Bucket": "b"})
        command = removal(target, "AWS::S3::Bucket", "b")
    assert f"# {said}" in command
    if status is None:
        assert ["aws", "s3", "rb", "s3://b", "--force"] == _words(command)[2:7]
        return
    # A versioned bucket: every version and delete marker first, each call on the same target, then the bucket.
    assert "list-object-versions" in command and "delete-object" in command
    assert command.count(f"--endpoint-url {LOCAL}") == command.count("aws ") == 3
    assert "--force" not in command


# ------------------------------------------------------------------------------------------------ the deploy's hint


def _record(api_url: str, endpoint: str | None) -> StackRecord:
    return StackRecord(stack_name="s", stack_id="id", region="us-east-1", outputs={"ApiUrl": api_url},
                       endpoint_url=endpoint)


def test_after_a_deploy_to_aws_the_hint_is_smoke_on_the_stack() -> None:
    lines = smoke.next_steps(_record("https://abc.execute-api.us-east-1.amazonaws.com", None), profile="p")
    assert lines.endswith("check it: seglog smoke --stack s --profile p")


def test_after_a_deploy_to_localstack_the_hint_is_smoke_on_the_emulator() -> None:
    """LocalStack's free tier answers a placeholder ApiUrl: smoke --stack cannot work there, so the hint points to
    the emulator, which runs the same handlers, artifact and pipeline (tests/deploy/test_smoke.py runs it)."""
    record = _record("https://unknown.execute-api.amazonaws.com/", LOCAL)
    assert not smoke.has_api(record)
    lines = smoke.next_steps(record).splitlines()
    assert 'eval "$(seglog env --stack s)"' in lines[0] and "seglog smoke --stack" not in "\n".join(lines)
    assert "no HTTP API" in lines[1] and "emulate" in lines[1]
    assert "seglog smoke --api-url http://127.0.0.1:4599" in lines[1]


# ------------------------------------------------------------------------------------------------ smoke's defaults


@dataclass
class MemoryDeployment:
    """An in-memory stand-in for a deployment: its stores (what smoke reads as the Backend), an API that appends
    with the deployment's SnapshotEvery, and a pipeline that runs whenever smoke waits (unless stopped)."""

    snapshot_every: int
    pipeline: bool = True
    append_seconds: float = 0.0
    store: InMemoryLogStore = field(default_factory=InMemoryLogStore)
    blobs: InMemoryBlobStore = field(default_factory=InMemoryBlobStore)
    pending: InMemoryPendingStore = field(default_factory=InMemoryPendingStore)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.log = EventLog(store=self.store, blobs=self.blobs, snapshot_every=self.snapshot_every, cache_tail=False)
        self.document = SheetDocument(reader=LogReader(store=self.store), blobs=self.blobs)

    def client(self, _url: str) -> SeglogClient:
        return cast(SeglogClient, FakeClient(self))

    def backend(self) -> Backend:
        return cast(Backend, self)

    def wait(self, seconds: float) -> None:
        """Smoke's sleep while it waits for the pipeline: the router keeps large bodies, the worker builds."""
        time.sleep(min(seconds, 0.01))
        if not self.pipeline:
            return
        for log_id in list(self.store.log_ids()):
            for entry in LogReader(store=self.store).all_entries(log_id):
                if entry.external:
                    self.blobs.keep(entry.external)
            rebuild(self.store, self.blobs, self.pending, log_id, body_of=self.document.body)


@dataclass
class FakeClient:
    deployment: MemoryDeployment

    def create(self) -> Any:
        return SimpleNamespace(log_id=self.deployment.log.create())

    def append(self, log_id: uuid.UUID, entry: Any) -> Any:
        time.sleep(self.deployment.append_seconds)
        body = to_body(msgspec.convert(msgspec.to_builtins(entry), EntryIn))
        entry_id = uuid.uuid4()
        self.deployment.log.append(log_id, body, entry_id=entry_id)
        return SimpleNamespace(entry_id=entry_id)

    def load(self, log_id: uuid.UUID) -> Any:
        sheet, _ = self.deployment.document.load(log_id)
        return SimpleNamespace(rows=sheet.rows())


def _run(deployment: MemoryDeployment, lines: list[str], **options: Any) -> smoke.SmokeReport:
    return smoke.run_smoke("https://api", deployment.backend(), make_client=deployment.client, sleep=deployment.wait,
                           progress=lines.append, **options)


def test_with_the_stacks_snapshot_every_the_default_edits_reach_a_snapshot_and_it_completes() -> None:
    deployment, lines = MemoryDeployment(snapshot_every=20), []
    report = _run(deployment, lines, clients=3, snapshot_every=20)
    assert report.ok, (report.problems, report.verify)
    assert 1 + 3 * smoke.edits_for(20, 3) == report.appends >= 20
    assert report.verify is not None and report.verify.completed >= 2
    assert "SnapshotEvery is 20: 3 clients x 8 edits reach a snapshot" == lines[0]


def test_without_a_known_snapshot_every_the_clients_edit_until_the_api_appends_a_snapshot() -> None:
    """`smoke --api-url` alone: nothing says SnapshotEvery, so the clients edit until the sheet's log holds a Snapshot
    entry (read from the tables), then stop; the snapshot must complete."""
    deployment, lines = MemoryDeployment(snapshot_every=30, append_seconds=0.01), []
    report = _run(deployment, lines, clients=3)
    assert report.ok, (report.problems, report.verify)
    assert report.verify is not None and report.verify.completed >= 2
    assert 30 <= report.appends < 300  # stopped soon after the first snapshot point, far from the limit
    assert lines[0].startswith("SnapshotEvery unknown")
    assert any(line.startswith("the API appended a Snapshot entry at 0/") for line in lines)


def test_a_search_that_finds_no_snapshot_fails_and_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smoke, "MAX_SEARCH_APPENDS", 30)
    report = _run(MemoryDeployment(snapshot_every=1000), [], clients=3)
    assert not report.ok
    assert ["no Snapshot entry after 31 appends: the deployment's SnapshotEvery is above that, or its API appends "
            "none; pass --edits"] == report.problems


def test_a_default_run_whose_snapshot_never_comes_fails() -> None:
    """The stack says 20 but its API snapshots every 1000 (a record gone stale): no snapshot past creation."""
    report = _run(MemoryDeployment(snapshot_every=1000), [], clients=2, snapshot_every=20)
    assert not report.ok
    assert report.problems[0].startswith("no snapshot past the creation one completed (SnapshotEvery 20,")


def test_explicit_edits_below_snapshot_every_pass_with_a_note() -> None:
    report = _run(MemoryDeployment(snapshot_every=1000), [], clients=2, edits=3)
    assert report.ok and report.appends == 7
    assert "no snapshot was due" in report.notes[0]


def test_a_pipeline_that_does_not_run_fails_within_the_wait_with_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smoke, "PROGRESS_EVERY", 0.0)
    lines: list[str] = []
    started = time.monotonic()
    report = _run(MemoryDeployment(snapshot_every=10, pipeline=False), lines, clients=2, snapshot_every=10,
                  timeout=0.5)
    assert time.monotonic() - started < 10
    assert any("did not settle within 0 s" in p or "did not settle within 1 s" in p for p in report.problems)
    waiting = [line for line in lines if line.startswith("waiting for the pipeline: ")]
    assert waiting and "1/2 snapshots complete" in waiting[-1]


def test_edits_for_passes_snapshot_every() -> None:
    for every in (10, 11, 100, 1000, 1001):
        for clients in (1, 2, 3, 5):
            edits = smoke.edits_for(every, clients)
            assert 1 + clients * edits >= every + 1  # the append at num `every` is a client's
            assert 1 + clients * (edits - 2) < every  # and not many more
    assert smoke.MAX_EDITS == smoke.edits_for(10**9, 1)
