"""The worker's sandbox: a Lambda execution environment's view of the machine, and nothing of the emulator's
(DESIGN §10.1: what deploys is what runs locally).

A worker process is an isolated interpreter, ``python -I -S -B -u`` (no site-packages, no PYTHON* variables, no
bytecode written: /var/task is read-only on Lambda), whose ``sys.path`` is exactly

1. the function's code directories: the unpacked artifact (Lambda's /var/task), after any directory a test
   puts first (as layers go after /var/task, a test's handlers come before the artifact);
2. the runtime directory: the emulator's worker wrapper alone (:func:`runtime_dir`), as /var/runtime holds
   Lambda's runtime interface client;
3. the SDK Lambda's Python runtimes include (:func:`sdk_dir`: boto3, botocore and their dependencies, "Your code
   runs in an environment that includes the SDK for Python (Boto3)", AWS Lambda Developer Guide, lambda-python),
   after the artifact, so an artifact's own copy wins as on Lambda;
4. the standard library.

So a dependency the artifact lacks, or a file left out of it, fails here at Init as on Lambda
(Runtime.ImportModuleError), and nothing only the development virtualenv holds (yaml, psutil, seglog_stack,
structlog) can be imported by a handler. The wrapper imports the standard library, its own modules and botocore
(the artifact's when it has one: the clients it counts requests on are the ones the handler uses), and the
application's invocation hook by name: nothing else of the artifact's.

The environment is the function's variables, Lambda's reserved ones over them, and the SDK's endpoint and
credential variables (AWS Lambda Developer Guide, configuration-envvars, "Defined runtime environment
variables") — not the invoker's environment. Emulator-only settings (the fault plan) travel in
:data:`WRAPPER_VARIABLES`, which the wrapper reads and removes from ``os.environ`` before it imports the handler.
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from seglog_emulator.worker_process import WRAPPER_VARIABLES

if TYPE_CHECKING:
    from seglog_awsmodel.config import FunctionSpec

#: The module the worker process runs, and the root of what the runtime directory holds.
WRAPPER: Final = "seglog_emulator.worker_process"
#: The SDK's credential variables (Lambda sets them from the execution role) passed from the invoker's
#: environment; every AWS_ENDPOINT_URL* variable is passed too (the local stack's endpoints).
CREDENTIAL_VARIABLES: Final = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
ENDPOINT_PREFIX: Final = "AWS_ENDPOINT_URL"
#: What Lambda's Python runtimes set that is not the function's (configuration-envvars): the locale, time zone
#: and a PATH. A host without the en_US.UTF-8 locale makes Python coerce to C.UTF-8 (PEP 538): UTF-8 either way.
LAMBDA_DEFAULTS: Final = {"LANG": "en_US.UTF-8", "TZ": ":UTC", "PATH": "/usr/local/bin:/usr/bin:/bin"}
#: The worker's interpreter flags: isolated (-I: no PYTHON* variables, no user site), no site-packages (-S), no
#: bytecode written (-B), unbuffered output (-u: prints reach the log as they happen).
INTERPRETER_FLAGS: Final = ("-I", "-S", "-B", "-u")
_BOOT: Final = (f"import sys; sys.path[0:0] = sys.argv[1:]; del sys.argv[1:]; "
                f"from {WRAPPER} import main; sys.exit(main())")


def command(code: Sequence[Path]) -> list[str]:
    """The worker's command line: an isolated interpreter whose path is ``code``, the runtime directory, and the
    standard library."""
    return [sys.executable, *INTERPRETER_FLAGS, "-c", _BOOT, *(str(p) for p in code), str(runtime_dir()),
            str(sdk_dir())]


def environment(function: FunctionSpec, *, code: Sequence[Path], region: str,
                parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's whole environment: Lambda's defaults, the function's variables, the endpoints and credentials
    of ``parent`` (the invoker's environment), the wrapper's variables, and Lambda's reserved variables over all
    (reserved variables cannot be overridden, configuration-envvars)."""
    parent = os.environ if parent is None else parent
    env = dict(LAMBDA_DEFAULTS)
    # The wrapper's variables come from the emulator only: a function configured with one (in the template, as a
    # deployed function could be) arms nothing, here as on AWS (DESIGN §10.4).
    env.update({name: value for name, value in function.Environment.items() if name not in WRAPPER_VARIABLES})
    env.update({name: value for name, value in parent.items()
                if name.startswith(ENDPOINT_PREFIX) or name in CREDENTIAL_VARIABLES or name in WRAPPER_VARIABLES})
    task_root = str(code[0]) if code else ""
    env.update({
        "_HANDLER": function.Handler,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.Runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.MemorySize),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{dt.datetime.now(dt.UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "LAMBDA_TASK_ROOT": task_root,
        "LAMBDA_RUNTIME_DIR": str(runtime_dir()),
    })
    if function.LogFormat == "JSON":  # Lambda's advanced logging controls: what its runtime reads
        env.update({"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": function.ApplicationLogLevel})
    return env


# ------------------------------------------------------------------------------------------------ runtime dir


@functools.cache
def runtime_dir() -> Path:
    """A directory holding the worker wrapper and the emulator modules it imports, nothing else (created once per
    content, then reused; bytecode compiled, since workers write none)."""
    sources = wrapper_modules()
    digest = hashlib.sha256()
    for relative, path in sources.items():
        digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    root = Path(tempfile.gettempdir()) / f"seglog-worker-runtime-{os.getuid()}"
    target = root / digest.hexdigest()[:24]
    if target.is_dir():
        return target
    work = root / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for relative, path in sources.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, work / relative)
    subprocess.run([sys.executable, "-I", "-m", "compileall", "-q", str(work)], check=False,
                   stdout=subprocess.DEVNULL)
    try:
        work.rename(target)
    except OSError:  # another process made it first: theirs is the same
        shutil.rmtree(work, ignore_errors=True)
    return target


#: What Lambda's Python runtimes carry besides the standard library: the SDK and what it imports.
SDK_MODULES: Final = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")


@functools.cache
def sdk_dir() -> Path:
    """A directory holding links to this interpreter's copies of :data:`SDK_MODULES` and nothing else (made once per
    set of versions, then reused)."""
    found = {name: path for name in SDK_MODULES if (path := _module_file(name)) is not None}
    sources = {name: path.parent if path.name == "__init__.py" else path for name, path in found.items()}
    versions = "\0".join(f"{name}={source}" for name, source in sorted(sources.items()))
    root = Path(tempfile.gettempdir()) / f"seglog-worker-sdk-{os.getuid()}"
    target = root / hashlib.sha256(versions.encode()).hexdigest()[:24]
    if target.is_dir():
        return target
    work = root / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    for source in sources.values():
        (work / source.name).symlink_to(source)
    try:
        work.rename(target)
    except OSError:  # another process made it first: theirs is the same
        shutil.rmtree(work, ignore_errors=True)
    return target


def wrapper_modules(root: str = WRAPPER) -> dict[str, Path]:
    """The emulator's modules the wrapper needs, by path relative to the runtime directory: ``root``, every
    ``seglog_emulator`` and ``seglog_awsmodel`` module it imports (at any depth, read from the source, lazy
    imports included), and their packages' ``__init__``. Found by following imports, so a module added to the
    wrapper is carried along."""
    packages = (root.partition(".")[0], "seglog_awsmodel")
    found: dict[str, Path] = {}
    pending = [root]
    while pending:
        name = pending.pop()
        path = _module_file(name)
        if path is None:
            continue
        relative = _relative(name, path)
        if relative in found:
            continue
        found[relative] = path
        parent = name.rpartition(".")[0]
        pending += [parent] if parent else []
        pending += [n for n in _imports(path, name) if n.partition(".")[0] in packages]
    return dict(sorted(found.items()))


def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # "a.b.Name": a name imported from a module, not a module
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _relative(name: str, path: Path) -> str:
    parts = name.split(".")
    if path.name == "__init__.py":
        return "/".join([*parts, "__init__.py"])
    return "/".join(parts) + ".py"


def _imports(path: Path, name: str) -> Iterable[str]:
    """Absolute names ``path`` imports: ``import a.b`` gives a.b; ``from a.b import c`` gives a.b and a.b.c (c may
    be a module); relative imports are resolved against ``name``. Imports under ``if TYPE_CHECKING:`` never run,
    so they are left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending += node.orelse
            continue
        pending += ast.iter_child_nodes(node)
