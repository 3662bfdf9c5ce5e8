"""What to build, read from the template: each function's CodeUri, Runtime and Architectures (Globals merged),
grouped so functions with the same three share one artifact, and the workspace project that owns each CodeUri.

SAM's Globals (sam-specification-template-anatomy-globals): a function's own property replaces the global one.
Lambda's default architecture is x86_64 (Lambda API Reference, CreateFunction, "Architectures").
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from seglog_awsmodel.template import Template
from seglog_deploy.errors import BuildError

FUNCTION_TYPE: Final = "AWS::Serverless::Function"
#: Lambda architecture -> (uv's --python-platform, the ELF machine its binaries must have).
PLATFORMS: Final = {
    "arm64": ("aarch64-manylinux2014", "aarch64"),
    "x86_64": ("x86_64-manylinux2014", "x86_64"),
}
DEFAULT_ARCHITECTURE: Final = "x86_64"


@dataclass(frozen=True, kw_only=True)
class FunctionTarget:
    """One function of the template, as the build sees it."""

    logical_id: str
    handler: str
    runtime: str
    arch: str
    #: The CodeUri directory, absolute (for InlineCode, the folder the build writes it to).
    code_uri: Path
    #: The function's InlineCode, which the build writes to ``index.py`` in :attr:`code_uri` (None: a CodeUri).
    inline: str | None = None


@dataclass(frozen=True, kw_only=True)
class ArtifactTarget:
    """One artifact: every function with this CodeUri, Runtime and architecture runs it."""

    code_uri: Path
    runtime: str
    arch: str
    #: The workspace project whose package is the CodeUri (its pyproject.toml's directory) and its name; for a
    #: plain CodeUri folder (:func:`is_plain`) None and the folder's path as the template writes it.
    project: Path | None
    package: str
    functions: tuple[FunctionTarget, ...]

    @property
    def python_version(self) -> str:
        """"3.13" for python3.13."""
        return self.runtime.removeprefix("python")

    @property
    def platform(self) -> str:
        return PLATFORMS[self.arch][0]

    @property
    def machine(self) -> str:
        return PLATFORMS[self.arch][1]


#: Where Lambda puts a Python function's inline code: "CloudFormation places it in a file named index" (AWS
#: CloudFormation User Guide, aws-properties-lambda-function-code, ZipFile), so its Handler is ``index.<name>``.
INLINE_FILE: Final = "index.py"


def read_functions(template: Template, *, arch: str | None = None,
                   inline_dir: Path | None = None) -> list[FunctionTarget]:
    """Every AWS::Serverless::Function of ``template``, in template order; ``arch`` replaces each one's own. A
    function with ``InlineCode`` gets the folder ``inline_dir/<LogicalId>`` as its code (the builder writes it).

    Raises:
        BuildError: with every problem found (a CodeUri that is not a local directory, a runtime that is not
            Python, an architecture Lambda does not have).
    """
    if arch is not None and arch not in PLATFORMS:
        raise BuildError(f"--arch {arch!r}: Lambda's architectures are {sorted(PLATFORMS)}")
    global_props: Mapping[str, Any] = (template.body.get("Globals") or {}).get("Function") or {}
    base = template.path.resolve().parent
    found: list[FunctionTarget] = []
    problems: list[str] = []
    for logical, resource in template.of_type(FUNCTION_TYPE).items():
        props = {**global_props, **(resource.get("Properties") or {})}
        if props.get("PackageType", "Zip") != "Zip":
            problems.append(f"{logical}: PackageType {props['PackageType']!r}; seglog build makes .zip artifacts")
            continue
        code_uri, runtime, handler = props.get("CodeUri"), props.get("Runtime"), props.get("Handler")
        architectures = props.get("Architectures") or [DEFAULT_ARCHITECTURE]
        inline = (resource.get("Properties") or {}).get("InlineCode")
        if inline is not None:
            if not isinstance(inline, str) or inline_dir is None:
                problems.append(f"{logical}.InlineCode: must be the code as a string, got {type(inline).__name__}"
                                if inline_dir else f"{logical}.InlineCode: needs a build directory")
            elif not (isinstance(handler, str) and handler.startswith(INLINE_FILE.removesuffix(".py") + ".")):
                problems.append(f"{logical}.Handler: {handler!r}; inline code is the file {INLINE_FILE}, so its "
                                "handler is index.<function> (for example index.handler)")
            else:
                code_uri = str(inline_dir / logical)
        if not isinstance(code_uri, str) or code_uri.startswith("s3://"):
            problems.append(f"{logical}.CodeUri: {code_uri!r} is not a directory of this repository")
        elif inline is None and not (base / code_uri).is_dir():
            problems.append(f"{logical}.CodeUri: {base / code_uri} is not a directory")
        if not isinstance(runtime, str) or not runtime.startswith("python3."):
            problems.append(f"{logical}.Runtime: {runtime!r}; seglog build builds Python runtimes (python3.x)")
        if not isinstance(handler, str) or "." not in handler:
            problems.append(f"{logical}.Handler: {handler!r} is not 'module.function'")
        if not isinstance(architectures, list) or len(architectures) != 1 or architectures[0] not in PLATFORMS:
            problems.append(f"{logical}.Architectures: {architectures!r}; Lambda takes one of {sorted(PLATFORMS)}")
        if problems:
            continue
        found.append(FunctionTarget(logical_id=logical, handler=str(handler), runtime=str(runtime),
                                    arch=arch or str(architectures[0]), code_uri=(base / str(code_uri)).resolve(),
                                    inline=inline))
    if problems:
        raise BuildError(f"{template.path}: cannot build these functions:\n  - " + "\n  - ".join(problems))
    if not found:
        raise BuildError(f"{template.path} declares no {FUNCTION_TYPE}: nothing to build")
    return found


def group(functions: list[FunctionTarget]) -> list[ArtifactTarget]:
    """One artifact per (CodeUri, Runtime, architecture), in the order their first function appears."""
    groups: dict[tuple[Path, str, str], list[FunctionTarget]] = {}
    for function in functions:
        groups.setdefault((function.code_uri, function.runtime, function.arch), []).append(function)
    targets = []
    for (code_uri, runtime, arch), members in groups.items():
        project: Path | None
        if is_plain(code_uri):
            project, package = None, code_uri.name
        else:
            project, package = owning_project(code_uri)
        targets.append(ArtifactTarget(code_uri=code_uri, runtime=runtime, arch=arch, project=project,
                                      package=package, functions=tuple(members)))
    return targets


#: A plain CodeUri's dependencies, as ``sam build`` reads them for Python (pip's requirements file format).
REQUIREMENTS: Final = "requirements.txt"


def is_plain(code_uri: Path) -> bool:
    """Whether ``code_uri`` is a plain folder of code, built the way ``sam build`` builds a Python function (its
    files, and the packages its ``requirements.txt`` names, if any), rather than a workspace package's source
    directory (``services/src``: a pyproject.toml with a [project] in it or just above it)."""
    if (code_uri / REQUIREMENTS).is_file():
        return True
    return not any(_project_name(directory / "pyproject.toml") for directory in (code_uri, code_uri.parent))


def _project_name(pyproject: Path) -> str | None:
    if not pyproject.is_file():
        return None
    name = (tomllib.loads(pyproject.read_text()).get("project") or {}).get("name")
    return name if isinstance(name, str) else None


def owning_project(code_uri: Path) -> tuple[Path, str]:
    """The nearest directory at or above ``code_uri`` whose pyproject.toml has a [project], and that name.

    The CodeUri is a package's source directory (``services/src``); what ships is that package with its
    runtime dependencies, the way its pyproject.toml declares them.

    Raises:
        BuildError: no such project up to the filesystem root.
    """
    for directory in (code_uri, *code_uri.parents):
        name = _project_name(directory / "pyproject.toml")
        if name is not None:
            return directory, name
    raise BuildError(f"CodeUri {code_uri} belongs to no Python project (no pyproject.toml with a [project] "
                     "above it): seglog build ships a workspace package and its dependencies")


def workspace_root(start: Path) -> Path | None:
    """The uv workspace root at or above ``start`` (a pyproject.toml with [tool.uv.workspace]), or None."""
    for directory in (start, *start.parents):
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            tool = tomllib.loads(pyproject.read_text()).get("tool") or {}
            if "workspace" in (tool.get("uv") or {}):
                return directory
    return None


def handler_file(code: Path, handler: str) -> Path | None:
    """The file in an unpacked artifact that Lambda imports for ``handler``, or None if it is not there."""
    parts = handler.rpartition(".")[0].split(".")
    for candidate in (code.joinpath(*parts).with_suffix(".py"), code.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None
