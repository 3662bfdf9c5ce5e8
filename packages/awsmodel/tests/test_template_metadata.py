"""Where a template is found by default, and the emulator's settings a template carries (Metadata SeglogEmulator)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_awsmodel.template import TemplateError, crash_points_of, default_template_path, load_template


def write(path: Path, metadata: str) -> Path:
    path.write_text(f"Transform: AWS::Serverless-2016-10-31\nMetadata:\n  SeglogEmulator:\n{metadata}"
                    "Resources:\n  Worker:\n    Type: AWS::Serverless::Function\n    Properties:\n"
                    "      Handler: app.handler\n      Runtime: python3.13\n", encoding="utf-8")
    return path


def test_the_default_template_is_the_working_directorys_or_a_parents(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "template.yaml").write_text("Resources: {}\n", encoding="utf-8")
    (tmp_path / "src" / "app").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src" / "app")
    assert tmp_path / "template.yaml" == default_template_path()


def test_outside_any_app_no_template_is_taken_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not seglog's own, found beside the tool's package: a user in the wrong folder is told to pass one."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TemplateError, match=r"no template.yaml in .* or its parents: .*--template PATH"):
        default_template_path()


def test_crash_points_are_declared_per_function_with_a_hook(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "    InvocationHook: app.hooks\n    CrashPoints:\n"
                 "      Worker: [after_write, before_ack]\n")
    assert {"Worker": ("after_write", "before_ack")} == crash_points_of(load_template(path))


@pytest.mark.parametrize(("metadata", "needle"), [
    ("    InvocationHook: app.hooks\n    CrashPoints:\n      Nobody: [a]\n", "names Nobody, which the template"),
    ("    InvocationHook: app.hooks\n    CrashPoints:\n      Worker: a\n", "must map a function's logical id"),
    ("    CrashPoints:\n      Worker: [a]\n", "needs an InvocationHook"),
])
def test_bad_crash_points_are_refused_with_what_to_write(tmp_path: Path, metadata: str, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle):
        crash_points_of(load_template(write(tmp_path / "t.yaml", metadata)))
