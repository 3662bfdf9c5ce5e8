"""The worker's sandbox runs the built artifact, not the source tree (DESIGN §10.1): an isolated interpreter whose
path is the function's code, the worker wrapper's runtime directory and the standard library. A dependency left
out of the artifact fails the Init as Lambda fails it (Runtime.ImportModuleError, "Unable to import module
'...': No module named '...'"), with the INIT_REPORT line Lambda logs (AWS Lambda Developer Guide,
lambda-runtime-environment, "Failures during the Init phase"); what only the development virtualenv holds
cannot be imported by a handler.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import msgspec
import pytest
from structlog.testing import capture_logs

from seglog_deploy.build import host_arch
from seglog_deploy.manifest import Manifest
from seglog_emulator import sandbox
from seglog_emulator.artifacts import code_dirs
from seglog_emulator.errors import EmulatorError
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker, Outcome

HANDLERS = Path(__file__).resolve().parent / "handlers"
#: Installed in the development virtualenv, never in an artifact.
DEV_ONLY = ("yaml", "psutil", "click", "seglog_stack", "seglog_deploy", "seglog_cli", "seglog_emulator.supervisor")


def test_isolated_worker_imports_the_artifact_and_nothing_of_the_dev_virtualenv(lambda_code: Path) -> None:
    """The handler's process has no site-packages: the artifact's packages import, the development-only ones fail
    with ModuleNotFoundError, though the invoker's own interpreter has every one of them."""
    spec = FunctionSpec(logical_id="probe-imports", Handler="invoker_probe.imports")
    names = ["boto3", "msgspec", "aws_lambda_powertools", "seglog_services.api", *DEV_ONLY]
    with LambdaInvoker(spec, code=[HANDLERS, lambda_code]) as invoker:
        result = invoker.invoke({"names": names})

    assert Outcome.SUCCESS == result.outcome, result.error_message
    imports = result.payload["imports"]
    assert {"boto3": None, "msgspec": None, "aws_lambda_powertools": None,
            "seglog_services.api": None} == {name: imports[name] for name in names[:4]}
    assert all((imports[name] or "").startswith("ModuleNotFoundError") for name in DEV_ONLY), imports
    assert [str(HANDLERS), str(lambda_code), str(sandbox.runtime_dir())] == result.payload["path"][:3]
    assert not any("site-packages" in entry for entry in result.payload["path"])
    assert {"isolated": 1, "no_site": 1, "dont_write_bytecode": 1} == result.payload["flags"]
    __import__("yaml")  # the invoker's interpreter has it: only the sandbox keeps it out


def test_artifact_missing_a_dependency_fails_init_with_import_module_error(lambda_code: Path, tmp_path: Path) -> None:
    """A copy of the artifact without aws_lambda_powertools: the stream router's Init fails as Lambda's does,
    Runtime.ImportModuleError with Lambda's message, and the INIT_REPORT line carries the Init Duration."""
    broken = tmp_path / "task"
    shutil.copytree(lambda_code, broken)
    shutil.rmtree(broken / "aws_lambda_powertools")
    spec = FunctionSpec(logical_id="StreamRouterFunction", Handler="seglog_services.stream_router.handler")
    with capture_logs() as logs, LambdaInvoker(spec, code=[broken]) as invoker:
        result = invoker.invoke({"Records": []})

    assert (Outcome.ERROR, "Runtime.ImportModuleError") == (result.outcome, result.error_type)
    assert ("Unable to import module 'seglog_services.stream_router': No module named 'aws_lambda_powertools'"
            == result.error_message)
    [report] = [line for line in logs if line["event"] == "INIT_REPORT"]
    assert ("init", "error", "Runtime.ImportModuleError") == (report["phase"], report["status"], report["error_type"])
    assert report["init_duration_ms"] > 0 and result.init_duration_ms == pytest.approx(report["init_duration_ms"],
                                                                                        abs=0.01)


def test_the_same_function_on_the_whole_artifact_initialises(lambda_code: Path) -> None:
    """The control for the test above: the unchanged artifact imports the stream router (so what failed there
    was the missing package, not the sandbox)."""
    spec = FunctionSpec(logical_id="StreamRouterFunction", Handler="seglog_services.stream_router.handler")
    with LambdaInvoker(spec, code=[lambda_code]) as invoker:
        result = invoker.invoke({"Records": []})

    assert result.error_type != "Runtime.ImportModuleError", result.error_message
    assert result.cold_start and result.init_duration_ms is not None


def test_runtime_dir_holds_the_wrapper_and_the_emulator_modules_it_imports_only() -> None:
    """The runtime directory carries the wrapper and what it imports, found by following imports; nothing that
    reads the template or runs the supervisor (they import yaml and the stack manager)."""
    modules = sandbox.wrapper_modules()

    assert {"seglog_emulator/__init__.py", "seglog_emulator/worker_process.py", "seglog_emulator/jsonlog.py",
            "seglog_emulator/usage.py", "seglog_emulator/faults/runtime.py",
            "seglog_emulator/faults/botocore_injector.py"} <= set(modules)
    assert not {"seglog_emulator/supervisor.py", "seglog_emulator/config.py", "seglog_emulator/invoker.py",
                "seglog_emulator/sandbox.py", "seglog_emulator/worker_handle.py", "seglog_emulator/logfeed.py",
                "seglog_emulator/metrics.py"} & set(modules)
    root = sandbox.runtime_dir()
    assert sorted(modules) == sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))


def test_a_missing_code_directory_is_refused() -> None:
    """An invoker without its artifact is a configuration error, not a worker that imports from elsewhere."""
    spec = FunctionSpec(logical_id="ApiFunction", Handler="seglog_services.api.handler")
    with pytest.raises(ValueError, match="seglog build"):
        LambdaInvoker(spec, code=[])
    with pytest.raises(ValueError, match="missing"):
        LambdaInvoker(spec, code=[Path(sys.prefix) / "no-such-dir"])


def test_the_emulator_takes_a_manifest_an_artifact_directory_or_an_unpacked_tree(
        lambda_artifact: Path, lambda_code: Path, tmp_path: Path) -> None:
    """``--artifact``: a manifest gives each function its artifact's tree; an artifact directory its code/; any
    other directory is the tree itself (.aws-sam/build/ApiFunction). A manifest without the function, or built
    for another machine (its binaries would not load here), is refused with what to run instead."""
    record = Manifest.read(lambda_artifact).artifact_of("ApiFunction")
    other = "arm64" if host_arch() == "x86_64" else "x86_64"
    foreign = Manifest.read(lambda_artifact)
    foreign = msgspec.structs.replace(foreign, artifacts={
        key: msgspec.structs.replace(a, arch=other) for key, a in foreign.artifacts.items()})
    foreign.write(tmp_path / "manifest.json")

    assert [lambda_code] == code_dirs(lambda_artifact, "ApiFunction")
    assert [record.code] == code_dirs(Path(record.path), "ApiFunction")
    assert [tmp_path] == code_dirs(tmp_path, "AnyFunction")
    with pytest.raises(EmulatorError, match=f"seglog build --arch {host_arch()}"):
        code_dirs(tmp_path / "manifest.json", "ApiFunction")
    with pytest.raises(EmulatorError, match="no function 'NoSuchFunction'"):
        code_dirs(lambda_artifact, "NoSuchFunction")
