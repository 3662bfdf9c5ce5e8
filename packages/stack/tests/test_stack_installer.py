"""The first-use installer on an empty seglog home, as on a fresh machine (network registries: PyPI, npm).

It uses a temporary SEGLOG_HOME, so it really installs (uv's and npm's caches make that a few seconds), and
checks that a partial install is redone while a complete one is left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from seglog_stack import StackInstaller
from seglog_stack.installer import DYNAMODB_LOCAL_NPM, EXECUTOR_STAMP, STAMP

pytestmark = pytest.mark.stack


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """An empty seglog home, removed afterwards (a LocalStack venv is a few hundred MB)."""
    yield tmp_path / "home"
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def install_events(installer: StackInstaller) -> list[str]:
    with capture_logs() as logs:
        installer.install()
    return [entry["event"] for entry in logs]


def test_install_lays_out_localstack_dynamodb_local_and_java_then_redoes_only_a_partial_part(
    home: Path,
) -> None:
    """An empty home gets LocalStack's venv, DynamoDB Local and LocalStack's var_libs wired to both and to
    Java; a part whose stamp is missing is installed again; a complete home is left as it is."""
    installer = StackInstaller(home)
    installation = installer.install()

    assert installation.localstack_python.is_file()
    assert (installation.dynamodb_local_dir / "DynamoDBLocal.jar").is_file()
    assert (installation.dynamodb_local_dir / "DynamoDBLocal_lib").is_dir()
    assert {"npm_package": DYNAMODB_LOCAL_NPM} == json.loads((installation.dynamodb_local_dir / STAMP).read_text())
    var_libs = installation.var_libs
    assert home / "localstack-fs" / "var/lib/localstack/lib" == var_libs
    assert (var_libs / "java" / "21" / "bin" / "java").is_file()
    ddb = var_libs / "dynamodb-local" / "2"
    assert (ddb / "DynamoDBLocal.jar").resolve() == (installation.dynamodb_local_dir / "DynamoDBLocal.jar")
    with zipfile.ZipFile(ddb / "ddb-local-loader-0.1.jar") as jar:
        assert "Premain-Class: NoopAgent" in jar.read("META-INF/MANIFEST.MF").decode()

    # Our Lambda runtime executor is in LocalStack's venv, where LocalStack (started with -I) finds it by name.
    probe = ("from importlib.metadata import entry_points; "
             "print([e.name for e in entry_points(group='localstack.lambda.runtime_executor')])")
    found = subprocess.run([str(installation.localstack_python), "-I", "-c", probe], capture_output=True, text=True,
                           check=True).stdout
    assert "'seglog'" in found and "'docker'" in found

    assert [] == install_events(installer)

    # A changed executor plugin (its stamp no longer matches) is reinstalled alone: the venv is kept.
    (installer.venv / EXECUTOR_STAMP).write_text('{"plugin_sha256": "an older plugin"}')
    venv_stamp_mtime = os.stat(installer.venv / STAMP).st_mtime_ns
    assert ["stack.install.executor_plugin"] == [e for e in install_events(installer) if e != "stack.install.done"]
    assert venv_stamp_mtime == os.stat(installer.venv / STAMP).st_mtime_ns

    # An interrupted DynamoDB Local install (no stamp) is fetched again; the venv is kept.
    (installation.dynamodb_local_dir / STAMP).unlink()
    venv_stamp_mtime = os.stat(installer.venv / STAMP).st_mtime_ns
    assert ["stack.install.dynamodb_local"] == [e for e in install_events(installer) if e != "stack.install.done"]
    assert (installation.dynamodb_local_dir / STAMP).is_file()
    assert venv_stamp_mtime == os.stat(installer.venv / STAMP).st_mtime_ns
