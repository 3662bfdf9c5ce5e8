"""seglog build: Lambda artifacts with the runtime dependencies only, reproducible to the byte, checked against
Lambda's limits (AWS Lambda Developer Guide, gettingstarted-limits) and the target machine (DESIGN §10.1)."""

from __future__ import annotations

import importlib.util
import json
import stat
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from seglog_awsmodel.template import Template, load_template
from seglog_cli.main import cli
from seglog_deploy import tree
from seglog_deploy.build import Builder, host_arch
from seglog_deploy.errors import BuildError, ToolNotFoundError
from seglog_deploy.manifest import UNZIPPED_LIMIT, ZIPPED_LIMIT, ArtifactRecord, Manifest
from seglog_deploy.targets import PLATFORMS, handler_file, read_functions
from seglog_deploy.toolchain import find_uv

#: What helps develop and must never ship (DESIGN §10.4, STYLE "What ships and what helps develop live apart").
NEVER_SHIPPED = ("seglog_stack", "seglog_emulator", "seglog_deploy", "seglog_cli", "psutil", "yaml", "click", "rich")
#: What the handlers import, directly or through seglog_core and seglog_aws.
RUNTIME = ("seglog_services", "seglog_core", "seglog_aws", "boto3", "botocore", "aws_lambda_powertools", "msgspec",
           "structlog", "openpyxl")
TEMPLATE = load_template()


def only_artifact(manifest: Manifest) -> ArtifactRecord:
    [record] = manifest.artifacts.values()
    return record


@pytest.fixture(scope="module")
def arm_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Manifest, Manifest]:
    """The template built twice, for its own architecture (arm64), into two clean directories."""
    return (Builder(out=tmp_path_factory.mktemp("first")).build(),
            Builder(out=tmp_path_factory.mktemp("second")).build())


def test_an_unchanged_tree_rebuilds_to_the_same_bytes(arm_builds: tuple[Manifest, Manifest]) -> None:
    """Two builds into clean directories give the same zip, byte for byte, under the same content key."""
    first, second = (only_artifact(m) for m in arm_builds)

    assert first.path != second.path
    assert (first.key, first.zip_sha256) == (second.key, second.zip_sha256)
    assert tree.sha256(first.zip) == tree.sha256(second.zip) == first.zip_sha256


def test_every_function_shares_the_one_artifact_of_its_codeuri_runtime_and_architecture(
        arm_builds: tuple[Manifest, Manifest]) -> None:
    """The template's five functions have one CodeUri, Runtime and architecture (Globals): one artifact."""
    manifest = arm_builds[0]

    assert {"ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction", "RetentionFunction",
            "SnapshotSweepFunction"} == set(manifest.functions)
    assert {only_artifact(manifest).key} == {f.artifact for f in manifest.functions.values()}
    assert {("arm64", "python3.13")} == {(f.arch, f.runtime) for f in manifest.functions.values()}


def test_arm64_artifact_carries_aarch64_binaries_only(arm_builds: tuple[Manifest, Manifest]) -> None:
    """Architectures [arm64]: every compiled extension is an aarch64 ELF (e_machine 183), msgspec's among them,
    though this machine may be x86_64."""
    record = only_artifact(arm_builds[0])
    found = tree.machines(record.code)

    assert ["aarch64"] == list(found)
    assert any(path.startswith("msgspec/_core.cpython-313-aarch64") for path in found["aarch64"])
    assert {"aarch64": len(found["aarch64"])} == record.machines


def test_artifact_holds_the_runtime_dependencies_and_nothing_that_only_helps_develop(lambda_code: Path) -> None:
    """What the handlers import is there; the stack manager, the emulator, the build and deploy tools, the CLI
    and their dependencies are not, neither as packages nor as dist-info."""
    names = {path.name.split("-")[0].lower() for path in lambda_code.iterdir()}

    assert set(RUNTIME) <= names
    assert set() == set(NEVER_SHIPPED) & names
    for name in NEVER_SHIPPED:  # the development virtualenv has every one of them
        assert importlib.util.find_spec(name) is not None


def test_zip_entries_are_sorted_with_fixed_times_and_world_readable_modes(arm_builds: tuple[Manifest, Manifest]
                                                                           ) -> None:
    """Sorted names, 1980-01-01 times, 644 files (Lambda needs its code world-readable); the zip holds exactly the
    unpacked tree, and its size is what the manifest reports."""
    record = only_artifact(arm_builds[0])
    with zipfile.ZipFile(record.zip) as archive:
        entries = archive.infolist()

    names = [entry.filename for entry in entries]
    assert sorted(names) == names
    assert {(1980, 1, 1, 0, 0, 0)} == {entry.date_time for entry in entries}
    assert {stat.S_IFREG | 0o644} == {entry.external_attr >> 16 for entry in entries}
    assert [p.relative_to(record.code).as_posix() for p in tree.walk(record.code)] == names
    unzipped = sum(entry.file_size for entry in entries)
    assert (record.zipped_bytes, record.unzipped_bytes) == (record.zip.stat().st_size, unzipped)


def test_no_install_record_names_the_build_machine(arm_builds: tuple[Manifest, Manifest]) -> None:
    """No console script (its shebang names this machine's Python), no direct_url.json (a temporary path), and
    the dist-infos' RECORD lists no file that is gone."""
    code = only_artifact(arm_builds[0]).code

    assert not (code / "bin").exists()
    assert [] == list(code.glob("*.dist-info/direct_url.json")) + list(code.glob("*.dist-info/uv_cache.json"))
    for record in code.glob("*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            listed = line.split(",", 1)[0]
            assert (code / listed).exists(), f"{record.parent.name} lists {listed}"


def test_bytecode_ships_as_unchecked_hash_pyc(arm_builds: tuple[Manifest, Manifest]) -> None:
    """Lambda cannot write __pycache__ in /var/task, so the build ships .pyc files; unchecked-hash ones (PEP 552
    flags 0b01: hash-based, never checked against the source) stay valid whatever the files' times."""
    code = only_artifact(arm_builds[0]).code
    compiled = code / "seglog_services" / "api" / "__pycache__" / "routes.cpython-313.pyc"

    assert 0b01 == int.from_bytes(compiled.read_bytes()[4:8], "little")
    assert only_artifact(arm_builds[0]).bytecode


def test_unchanged_inputs_reuse_the_artifact_and_say_so(lambda_build: Manifest) -> None:
    """A second build of the same inputs reuses the content-keyed directory: same key, same zip, not rewritten."""
    record = only_artifact(lambda_build)
    before = record.zip.stat().st_mtime_ns
    lines: list[str] = []

    again = Builder(arch=host_arch(), progress=lines.append).build()

    assert record == only_artifact(again)
    assert before == record.zip.stat().st_mtime_ns
    assert any("reused" in line for line in lines), lines


def test_sizes_are_under_lambdas_limits(lambda_build: Manifest) -> None:
    """Lambda quotas: 50 MB zipped for a direct upload, 250 MB unzipped (gettingstarted-limits)."""
    record = only_artifact(lambda_build)

    assert 0 < record.zipped_bytes < ZIPPED_LIMIT
    assert record.zipped_bytes < record.unzipped_bytes < UNZIPPED_LIMIT


def test_template_problems_are_refused_all_at_once() -> None:
    """What seglog build cannot make is named, every problem in one error."""
    body = json.loads(json.dumps(TEMPLATE.body))
    functions = {k: v for k, v in body["Resources"].items() if v["Type"] == "AWS::Serverless::Function"}
    api, router, worker, retention, _sweep = functions
    body["Resources"][api]["Properties"]["Runtime"] = "nodejs22.x"
    body["Resources"][router]["Properties"]["Architectures"] = ["arm64", "x86_64"]
    body["Resources"][worker]["Properties"]["PackageType"] = "Image"
    body["Resources"][retention]["Properties"]["CodeUri"] = "no/such/dir"

    with pytest.raises(BuildError) as refused:
        read_functions(Template(path=TEMPLATE.path, body=body))

    for where in (f"{api}.Runtime", f"{router}.Architectures", f"{worker}: PackageType", f"{retention}.CodeUri"):
        assert where in str(refused.value)


def test_a_handler_whose_module_is_not_in_the_artifact_is_found_at_build_time(lambda_code: Path) -> None:
    """The check the build runs on every function: Lambda would fail such a handler at Init."""
    assert lambda_code / "seglog_services" / "api" / "__init__.py" == handler_file(lambda_code,
                                                                                  "seglog_services.api.handler")
    assert handler_file(lambda_code, "seglog_services.no_such_module.handler") is None


def test_elf_machines_are_read_from_each_binarys_header(tmp_path: Path) -> None:
    """e_machine (System V ABI ELF header, offset 18): 62 is x86_64, 183 aarch64; other files are not binaries."""
    header = bytearray(20)
    header[:6] = b"\x7fELF\x02\x01"
    (tmp_path / "a.so").write_bytes(bytes(header[:18]) + (62).to_bytes(2, "little"))
    (tmp_path / "b.so").write_bytes(bytes(header[:18]) + (183).to_bytes(2, "little"))
    (tmp_path / "c.py").write_text("x = 1\n")

    assert {"x86_64": ["a.so"], "aarch64": ["b.so"]} == tree.machines(tmp_path)


def test_build_command_prints_sizes_against_limits_and_copies_a_function(tmp_path: Path,
                                                                       lambda_build: Manifest) -> None:
    """`seglog build` prints one line per function (zipped and unzipped size against Lambda's limits, binaries'
    machine); `--json` prints the manifest; `--function F --into DIR` copies F's unpacked artifact (what sam
    build's Makefile runs) file for file."""
    arch = host_arch()
    shown = CliRunner().invoke(cli, ["build", "--arch", arch])
    as_json = CliRunner().invoke(cli, ["build", "--arch", arch, "--json"])
    copied = CliRunner().invoke(cli, ["build", "--arch", arch, "--function", "ApiFunction", "--into",
                                      str(tmp_path / "api")])

    assert (0, 0, 0) == (shown.exit_code, as_json.exit_code, copied.exit_code), shown.output + copied.output
    api_line = next(line for line in shown.stdout.splitlines() if line.startswith("ApiFunction"))
    assert "zipped (limit 50 MB)" in api_line and "unzipped (limit 250 MB)" in api_line
    assert f"{PLATFORMS[arch][1]} binar" in api_line
    assert Manifest.read(Builder(arch=arch).manifest_path) == Manifest.decode(as_json.stdout.encode())
    assert tree.tree_digest(only_artifact(lambda_build).code) == tree.tree_digest(tmp_path / "api")


def test_uv_is_found_from_seglog_uv_then_path_then_the_user_bin_else_the_error_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """./dev exports SEGLOG_UV; without it PATH, then ~/.local/bin/uv; with none, an error naming the fixes."""
    fake = tmp_path / "bin" / "uv"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    assert fake == find_uv({"SEGLOG_UV": str(fake), "PATH": ""})
    assert fake == find_uv({"PATH": str(fake.parent)})
    with pytest.raises(ToolNotFoundError, match="pip install --user uv"):
        find_uv({"PATH": str(tmp_path / "empty")})
