"""``seglog build``: reproducible Lambda artifacts from the workspace, one per (CodeUri, Runtime, architecture)
of the template, with the runtime dependencies of the CodeUri's package and nothing else (DESIGN §10.1).

The recipe (../shared/notes/deploy-findings.md; uv's guide "Using uv with AWS Lambda"):

1. ``uv export --package P --no-dev`` pins P's runtime closure; its workspace members (``-e ./packages/core``)
   are built as wheels (``uv build --wheel --python 3.13``: installing them from source is refused with
   ``--only-binary``, and a build without ``--python`` would try to download a CPython);
2. ``uv pip install --target code/ --python-platform aarch64-manylinux2014 --python-version 3.13
   --only-binary :all:`` installs the wheels for Lambda's platform, binaries included, whatever this machine is;
3. what varies between installs is stripped or fixed (:mod:`seglog_deploy.tree`), bytecode is compiled with
   unchecked-hash .pyc files, and the tree is zipped in a fixed order with fixed times and modes.

Why bytecode ships: Lambda cannot write ``__pycache__`` under /var/task (read-only), so without .pyc files every
cold start compiles every module it imports (boto3 and botocore above all). Measured with the emulator's isolated
workers on the x86_64 twin (``python -m bench.bench_cold_start``, 2 shared cores, 2026-11-23): Init Duration
median 230-275 ms with .pyc, 720-990 ms without, per function; the .pyc files cost 3.2 MB zipped (19.5 MB
instead of 16.3) and 7 MB unzipped (33.1 MB instead of 26.0), far under Lambda's limits. Unchecked-hash .pyc
files are never compared with their source's time, so they stay valid in a zip whose times are all 1980, and are
the same bytes each build (compiled with PYTHONHASHSEED=0, so sets of constants keep one order).

Content-hashed: an artifact's directory is named after the hash of its inputs (the recipe's version, the
requirements, every source file of the workspace members it ships, the architecture, the runtime, uv's and
Python's versions). When that directory exists the build reuses it, and says so.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from seglog_awsmodel.template import load_template
from seglog_deploy import tree
from seglog_deploy.errors import BuildError
from seglog_deploy.manifest import (
    UNZIPPED_LIMIT,
    ArtifactRecord,
    FunctionRecord,
    Manifest,
    read_record,
    write_record,
)
from seglog_deploy.targets import (
    INLINE_FILE,
    REQUIREMENTS,
    ArtifactTarget,
    group,
    handler_file,
    read_functions,
    workspace_root,
)
from seglog_deploy.toolchain import Toolchain

log = structlog.get_logger("seglog.build")

#: Bump when the recipe changes what an artifact holds: every cached artifact is rebuilt.
RECIPE: Final = "seglog-build-1"
#: Where builds go, under the workspace root.
BUILD_DIR: Final = Path(".seglog") / "build"
#: Files of a workspace member that never reach its wheel, so never change an artifact.
_IGNORED: Final = ("__pycache__", ".pyc", ".pyo")

MIB: Final = 1024 * 1024

Progress = Callable[[str], None]


def host_arch() -> str:
    """The Lambda architecture of this machine (the emulator runs that twin of each artifact)."""
    machine = platform.machine().lower()
    return "arm64" if machine in ("aarch64", "arm64") else "x86_64"


@dataclass(frozen=True)
class _Inputs:
    """What one artifact is built from."""

    requirements: list[str]
    members: list[Path]
    key: str
    #: A plain CodeUri folder copied whole into the artifact (None: a workspace package, installed as a wheel).
    copy: Path | None = None


class Builder:
    """Builds the template's artifacts into ``out`` (``.seglog/build`` beside the template by default).

    Args:
        template: template.yaml (found from the working directory by default).
        arch: build every function for this architecture instead of its own (the emulator's host twin).
        bytecode: ship precompiled .pyc files (see the module docstring).
        progress: called with one line per step (the CLI prints them on standard error).
    """

    def __init__(self, template: Path | None = None, *, out: Path | None = None, arch: str | None = None,
                 bytecode: bool = True, progress: Progress | None = None) -> None:
        self.template = load_template(template)
        #: The uv workspace the template is in (None: an ordinary SAM app, every CodeUri a plain folder).
        self.uv_workspace = workspace_root(self.template.path.resolve().parent)
        #: Where tools run: the workspace root, or the template's folder.
        self.workspace = self.uv_workspace or self.template.path.resolve().parent
        # Builds go beside the template: two templates of one workspace (seglog's and an example's) never share
        # a manifest.
        self.out = (out or self.template.path.resolve().parent / BUILD_DIR).resolve()
        self.arch = arch
        self.bytecode = bytecode
        self._progress = progress or (lambda line: None)

    @property
    def manifest_path(self) -> Path:
        return self.out / (f"manifest.{self.arch}.json" if self.arch else "manifest.json")

    def build(self) -> Manifest:
        """Build (or reuse) every artifact, write the manifest, and return it.

        Raises:
            BuildError: a tool failed, a function's handler is not in its artifact, a binary is for another
                machine, or an artifact passes Lambda's unzipped limit.
            ToolNotFoundError: uv or the runtime's Python is missing.
        """
        functions_read = read_functions(self.template, arch=self.arch, inline_dir=self.out / "inline")
        for function in functions_read:
            if function.inline is not None:  # built as a plain folder of one file, like any other
                function.code_uri.mkdir(parents=True, exist_ok=True)
                written = function.code_uri / INLINE_FILE
                if not written.is_file() or written.read_text(encoding="utf-8") != function.inline:
                    written.write_text(function.inline, encoding="utf-8")
        targets = group(functions_read)
        artifacts: dict[str, ArtifactRecord] = {}
        functions: dict[str, FunctionRecord] = {}
        for target in targets:
            record = self._artifact(target)
            artifacts[record.key] = record
            for function in target.functions:
                functions[function.logical_id] = FunctionRecord(artifact=record.key, handler=function.handler,
                                                                runtime=function.runtime, arch=function.arch)
        manifest = Manifest(template=str(self.template.path.resolve()), arch=self.arch, artifacts=artifacts,
                            functions=functions)
        manifest.write(self.manifest_path)
        return manifest

    # ------------------------------------------------------------------------------------------ one artifact

    def _artifact(self, target: ArtifactTarget) -> ArtifactRecord:
        names = ", ".join(f.logical_id for f in target.functions)
        toolchain = Toolchain.find(self.workspace, target.python_version, nearest=True)
        if not toolchain.exact:
            self._progress(f"{names}: warning: {target.runtime} is not installed here; built with Python "
                           f"{sys.version_info.major}.{sys.version_info.minor} (the nearest installed), wheels for "
                           f"{target.runtime}, no bytecode (a .pyc of another version would not load); install "
                           f"python{target.python_version} for the runtime's own")
        inputs = self._inputs(target, toolchain)
        final = self.out / target.arch / inputs.key
        record = read_record(final / "artifact.json")
        if record is not None and record.path == str(final) and record.zip.is_file():
            self._progress(f"{names}: reused {self._shown(final)} ({target.arch}, inputs unchanged)")
            _check_handlers(target, record.code)
            return record
        self._progress(f"{names}: building {target.package} for {target.runtime} on {target.arch}")
        work = self.out / target.arch / f".tmp-{inputs.key[:16]}-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            record = self._make(target, toolchain, inputs, work, final)
            try:
                work.rename(final)
            except OSError:  # there already: another process built the same inputs (the same bytes) meanwhile,
                existing = read_record(final / "artifact.json")  # or an interrupted attempt left a husk
                if existing is not None and existing.zip.is_file():
                    return existing
                shutil.rmtree(final)
                work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return record

    def _inputs(self, target: ArtifactTarget, toolchain: Toolchain) -> _Inputs:
        """The pinned requirements and workspace members of ``target``'s package, and the hash of everything the
        artifact is made from.

        Raises:
            BuildError: a workspace package's CodeUri outside any uv workspace.
        """
        if target.project is None:
            return self._plain_inputs(target, toolchain)
        if self.uv_workspace is None:
            raise BuildError(f"CodeUri {target.code_uri} is the package {target.package} of {target.project}, and "
                             "no uv workspace holds it: build it from its workspace, or give the folder a "
                             f"{REQUIREMENTS} as sam build expects")
        exported = toolchain.run_uv(["export", "--package", target.package, "--no-dev", "--no-hashes",
                                     "--no-header", "--no-annotate"])
        requirements, members = [], []
        for line in exported.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("-e "):  # a workspace member, as a path relative to the workspace root
                members.append((self.workspace / line.removeprefix("-e ").strip()).resolve())
            else:
                requirements.append(line)
        digest = hashlib.sha256()
        for part in (RECIPE, target.arch, target.runtime, str(self.bytecode and toolchain.exact),
                     toolchain.uv_version(), toolchain.python_version(), *sorted(requirements)):
            digest.update(part.encode() + b"\0")
        for member in sorted(members):
            for path in _source_files(member):
                digest.update(path.relative_to(self.workspace).as_posix().encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
        return _Inputs(requirements=requirements, members=sorted(members), key=digest.hexdigest())

    def _plain_inputs(self, target: ArtifactTarget, toolchain: Toolchain) -> _Inputs:
        """A plain CodeUri folder (``sam build``'s Python recipe): its requirements file's lines as written, and
        every file of the folder, which is copied whole."""
        listed = target.code_uri / REQUIREMENTS
        requirements = []
        if listed.is_file():
            for line in listed.read_text().splitlines():
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith("#"):
                    requirements.append(line)
        digest = hashlib.sha256()
        for part in (RECIPE, "plain", target.arch, target.runtime, str(self.bytecode and toolchain.exact),
                     toolchain.uv_version(),
                     toolchain.python_version(), *requirements):
            digest.update(part.encode() + b"\0")
        for path in _tree_files(target.code_uri):
            digest.update(path.relative_to(target.code_uri).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return _Inputs(requirements=requirements, members=[], key=digest.hexdigest(), copy=target.code_uri)

    def _make(self, target: ArtifactTarget, toolchain: Toolchain, inputs: _Inputs, work: Path,
              final: Path) -> ArtifactRecord:
        dist, code = work / "dist", work / "code"
        if inputs.copy is not None:
            shutil.copytree(inputs.copy, code, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))
        for member in inputs.members:
            self._progress(f"  wheel {member.relative_to(self.workspace)}")
            toolchain.run_uv(["build", "--wheel", "--quiet", str(member), "--out-dir", str(dist),
                              "--python", str(toolchain.python)])
        (work / "requirements.txt").write_text("".join(f"{line}\n" for line in inputs.requirements))
        self._progress(f"  install {len(inputs.requirements)} requirements for {target.platform}")
        # --link-mode copy: uv links files from its cache by default, and the modes and times fixed below
        # would then change the cache's files.
        if inputs.requirements or inputs.members:
            toolchain.run_uv(["pip", "install", "--quiet", "--target", str(code), "--python",
                              str(toolchain.python), "--python-platform", target.platform, "--python-version",
                              target.python_version,
                              "--only-binary", ":all:", "--link-mode", "copy", "-r",
                              str(work / "requirements.txt"), *sorted(str(p) for p in dist.glob("*.whl"))])
        tree.strip_install_records(code)
        if self.bytecode and toolchain.exact:
            self._progress("  bytecode (unchecked-hash .pyc)")
            toolchain.run([str(toolchain.python), "-I", "-m", "compileall", "-q", "-j", "0",
                           "--invalidation-mode", "unchecked-hash", "-s", str(code), "-p", "/var/task", str(code)],
                          env={"PYTHONHASHSEED": "0"})
        tree.normalize(code)
        self._check(target, code)
        self._progress("  zip")
        tree.write_zip(code, work / "function.zip")
        shutil.rmtree(dist, ignore_errors=True)
        (work / "requirements.txt").unlink()
        digest = tree.sha256(work / "function.zip")
        found = tree.machines(code)
        record = ArtifactRecord(
            key=inputs.key, arch=target.arch, runtime=target.runtime, package=target.package,
            code_uri=os.path.relpath(target.code_uri, self.template.path.resolve().parent), path=str(final),
            zip_sha256=digest, code_sha256=tree.code_sha256(digest),
            zipped_bytes=(work / "function.zip").stat().st_size,
            unzipped_bytes=tree.unzipped_size(code), files=sum(1 for _ in tree.walk(code)),
            machines={machine: len(files) for machine, files in sorted(found.items())},
            bytecode=self.bytecode and toolchain.exact)
        write_record(record, work / "artifact.json")
        return record

    def _check(self, target: ArtifactTarget, code: Path) -> None:
        """Every handler's module is in the tree, every binary is for the target's machine, and the tree fits
        Lambda's unzipped limit.

        Raises:
            BuildError: naming the function, the files or the size.
        """
        _check_handlers(target, code)
        size = tree.unzipped_size(code)
        if size > UNZIPPED_LIMIT:
            raise BuildError(f"the {target.arch} artifact of {target.package} is {size / MIB:.1f} MB unzipped, over "
                             f"Lambda's {UNZIPPED_LIMIT / MIB:.0f} MB limit (gettingstarted-limits): trim its "
                             "dependencies")
        wrong = {machine: files for machine, files in tree.machines(code).items() if machine != target.machine}
        if wrong:
            listed = "; ".join(f"{machine}: {', '.join(files[:5])}" for machine, files in wrong.items())
            raise BuildError(f"the {target.arch} artifact holds binaries for another machine ({listed}): a "
                             "dependency has no wheel for this platform")

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.workspace)) if path.is_relative_to(self.workspace) else str(path)


def _check_handlers(target: ArtifactTarget, code: Path) -> None:
    for function in target.functions:
        if handler_file(code, function.handler) is None:
            raise BuildError(f"{function.logical_id}.Handler {function.handler!r}: its module is not in the "
                             f"artifact of {target.package} (CodeUri {target.code_uri}); Lambda would fail with "
                             "Runtime.ImportModuleError")


def _source_files(member: Path) -> list[Path]:
    """A workspace member's pyproject.toml and every file under its src/ (what its wheel is built from)."""
    return sorted([member / "pyproject.toml", *_tree_files(member / "src")], key=lambda p: p.as_posix())


def _tree_files(top: Path) -> list[Path]:
    """Every file under ``top`` but bytecode, in path order."""
    files = []
    for root, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED)
        files += [Path(root, n) for n in sorted(names) if not n.endswith(_IGNORED)]
    return sorted(files, key=lambda p: p.as_posix())
