"""The tool and the application apart (issue 36, point 4): no module of the emulator, the local stack, the build
and deploy, or the AWS model imports seglog's core, adapter or services, and none of their packages depends on
them. What only seglog needs from the tool is seglog's own (packages/plugin, seglog_plugin); what the tool needs to
know of an application it reads from the template (Metadata SeglogEmulator: InvocationHook, CrashPoints). Imports
under ``if TYPE_CHECKING:`` never run and are not counted (the sandbox's own rule)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from seglog_emulator.sandbox import _imports

ROOT = Path(__file__).resolve().parents[3]
TOOL = ("awsmodel", "deploy", "emulator", "stack")
SEGLOG = frozenset({"seglog_core", "seglog_aws", "seglog_services"})


def _seglog_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for package in TOOL:
        src = ROOT / "packages" / package / "src"
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            seglog = {imported.split(".")[0] for imported in _imports(path, name)} & SEGLOG
            if seglog:
                found[name] = seglog
    return found


def test_the_tool_imports_nothing_of_seglog() -> None:
    found = {name: sorted(packages) for name, packages in _seglog_imports().items()}
    assert {} == found, "the tool imports seglog's code (keep the tool apart: issue 36; seglog's side is seglog_plugin)"


def test_no_package_of_the_tool_depends_on_seglogs() -> None:
    depends = {package: sorted(set(tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())
                                   ["project"]["dependencies"]) & {"seglog-core", "seglog-aws", "seglog-services"})
               for package in TOOL}
    assert {package: [] for package in TOOL} == depends


def test_the_scan_sees_an_import(tmp_path: Path) -> None:
    """The scan is not blind: an import at the top, in a function and relative to a package are all seen."""
    module = tmp_path / "probe.py"
    module.write_text("import seglog_core.verify\n"
                      "def later():\n    from seglog_aws import backend\n", encoding="utf-8")
    assert {name.split(".")[0] for name in _imports(module, "probe")} >= {"seglog_core", "seglog_aws"}
