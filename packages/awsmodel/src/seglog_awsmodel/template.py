"""Reading template.yaml (AWS SAM): the one description of tables, bucket, queues, functions and mappings.

CloudFormation's short-form intrinsics (!Ref, !GetAtt, !Sub, ...) load as their long form
({"Ref": ...}, {"Fn::GetAtt": [...]}) so the rest of the code sees plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from seglog_awsmodel.errors import ToolError


class TemplateError(ToolError):
    """template.yaml is missing or does not say what seglog needs."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that understands CloudFormation short-form tags."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_Loader.add_multi_constructor("!", _intrinsic)


@dataclass(frozen=True)
class Template:
    """A parsed template. ``resources`` maps logical id to {"Type": ..., "Properties": ...}."""

    path: Path
    body: dict[str, Any]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return dict(self.body.get("Resources", {}))

    @property
    def parameters(self) -> dict[str, Any]:
        """Parameter defaults by name."""
        return {k: v.get("Default") for k, v in self.body.get("Parameters", {}).items()}

    def of_type(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v.get("Type") == type_}


#: The template's top-level ``Metadata`` key the emulator reads (CloudFormation and SAM pass Metadata through).
EMULATOR_METADATA = "SeglogEmulator"


def emulator_metadata(template: Template) -> dict[str, Any]:
    """The application's settings for the emulator, ``Metadata: SeglogEmulator:`` (empty when absent):

    ``InvocationHook``: a module of each function's artifact with ``arm(points, *, clock_skew)`` and ``disarm()``,
    which the worker calls around an invocation that a fault gives crash points or a clock skew.

    ``CrashPoints``: the named points of each function's code where a fault may kill it (``{Function: [point,
    ...]}``): ``worker_crash`` draws one of a queue-triggered function's, ``router_crash_after_send`` arms a
    stream-triggered function's; the hook's ``arm`` receives them.

    Raises:
        TemplateError: the section is not a mapping, or a setting has the wrong type.
    """
    metadata = template.body.get("Metadata") or {}
    section = metadata.get(EMULATOR_METADATA) if isinstance(metadata, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise TemplateError(f"{template.path}: Metadata.{EMULATOR_METADATA} must be a mapping, got {section!r}")
    hook = section.get("InvocationHook")
    if hook is not None and not (isinstance(hook, str) and hook.replace(".", "").replace("_", "").isalnum()):
        raise TemplateError(f"{template.path}: Metadata.{EMULATOR_METADATA}.InvocationHook must be a module name "
                            f"(for example my_app.crashpoints), got {hook!r}")
    points = section.get("CrashPoints", {})
    if not (isinstance(points, dict) and all(
            isinstance(function, str) and isinstance(names, list) and names
            and all(isinstance(name, str) and name for name in names) for function, names in points.items())):
        raise TemplateError(f"{template.path}: Metadata.{EMULATOR_METADATA}.CrashPoints must map a function's "
                            f"logical id to a list of point names (for example Worker: [after_write]), got {points!r}")
    unknown = sorted(set(points) - set(template.resources))
    if unknown:
        raise TemplateError(f"{template.path}: Metadata.{EMULATOR_METADATA}.CrashPoints names "
                            f"{', '.join(unknown)}, which the template does not declare")
    if points and hook is None:
        raise TemplateError(f"{template.path}: Metadata.{EMULATOR_METADATA}.CrashPoints needs an InvocationHook "
                            "(the module whose arm() the worker calls with the points to crash at)")
    return dict(section)


def crash_points_of(template: Template) -> dict[str, tuple[str, ...]]:
    """Each function's crash points, from ``Metadata.SeglogEmulator.CrashPoints`` (see :func:`emulator_metadata`)."""
    points = emulator_metadata(template).get("CrashPoints") or {}
    return {function: tuple(names) for function, names in points.items()}


#: The types of a function, before and after the SAM transform.
FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")


def default_template_path() -> Path:
    """template.yaml in the working directory or the nearest of its parents (as git finds its repository): the
    application the user stands in. Never the one beside this package: run from another app's folder, the tool
    must not silently take seglog's template.

    Raises:
        TemplateError: none there; pass --template.
    """
    here = Path.cwd()
    for base in (here, *here.parents):
        candidate = base / "template.yaml"
        if candidate.is_file():
            return candidate
    raise TemplateError(f"no template.yaml in {here} or its parents: run seglog in your SAM app's folder, or "
                        "pass --template PATH")


def load_template(path: Path | None = None) -> Template:
    path = path or default_template_path()
    try:
        body = yaml.load(path.read_text(), Loader=_Loader)
    except (OSError, yaml.YAMLError) as exc:
        raise TemplateError(f"cannot read {path}: {exc}") from exc
    if not isinstance(body, dict) or "Resources" not in body:
        raise TemplateError(f"{path} has no Resources section")
    return Template(path=path, body=body)
