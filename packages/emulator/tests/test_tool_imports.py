"""The tool and the application apart (issue 36): no module of the emulator, the local stack, the build and
deploy, or the AWS model imports seglog's core, adapter or services. Today some still do; :data:`KNOWN` lists them
with what they import, and shrinks as each moves behind the application interface. The list must match exactly:
a new import of seglog's code fails here, and so does a module that stopped importing it and is still listed (take
it off). Imports under ``if TYPE_CHECKING:`` never run and are not counted (the sandbox's own rule)."""

from __future__ import annotations

from pathlib import Path

from seglog_emulator.sandbox import _imports

ROOT = Path(__file__).resolve().parents[3]
TOOL = ("awsmodel", "deploy", "emulator", "stack")
SEGLOG = frozenset({"seglog_core", "seglog_aws", "seglog_services"})

#: Modules that still import seglog's code, and which of its packages. The issue is done when this is empty.
KNOWN: dict[str, set[str]] = {
    "seglog_awsmodel.faults": {"seglog_core"},
    "seglog_deploy.record": {"seglog_aws"},
    "seglog_deploy.smoke": {"seglog_aws", "seglog_core"},
    "seglog_emulator.chaos.coverage": {"seglog_core"},
    "seglog_emulator.chaos.dead_letters": {"seglog_aws", "seglog_core"},
    "seglog_emulator.chaos.progress": {"seglog_core"},
    "seglog_emulator.chaos.report": {"seglog_core"},
    "seglog_emulator.chaos.runner": {"seglog_core"},
    "seglog_emulator.chaos.timeline": {"seglog_core"},
    "seglog_emulator.chaos.watch": {"seglog_aws", "seglog_core"},
    "seglog_emulator.pollers.stream": {"seglog_core"},
    "seglog_stack.local": {"seglog_aws"},
}


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


def test_the_tool_imports_no_more_of_seglog_than_it_did() -> None:
    found = _seglog_imports()
    new = {name: sorted(found[name] - KNOWN.get(name, set())) for name in found
           if found[name] - KNOWN.get(name, set())}
    gone = sorted(name for name in KNOWN if name not in found or not KNOWN[name] <= found[name])
    assert not new, f"new imports of seglog's code in the tool (keep the tool apart: issue 36): {new}"
    assert not gone, f"these no longer import what KNOWN says: take them off the list: {gone}"


def test_the_scan_sees_an_import() -> None:
    """The scan is not blind: a module known to import core is found doing so."""
    assert "seglog_core" in _seglog_imports()["seglog_emulator.chaos.runner"]
