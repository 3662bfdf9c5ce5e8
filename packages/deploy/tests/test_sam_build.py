"""`sam build` makes the artifact `seglog build` makes, file for file (issue 10 point 1: users of SAM CLI are not
left out). template.yaml's functions say ``BuildMethod: makefile``; services/src/Makefile runs seglog build and
copies the function's unpacked artifact into SAM's ARTIFACTS_DIR (AWS SAM Developer Guide,
building-custom-runtimes). SAM CLI comes from its own pinned venv (sam-requirements.txt), installed once under
.seglog/tools."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from seglog_deploy import tree
from seglog_deploy.build import Builder
from seglog_deploy.sam_cli import SamCli
from seglog_deploy.toolchain import Toolchain

WORKSPACE = Path(__file__).resolve().parents[3]


def test_sam_build_gives_each_function_the_tree_seglog_build_makes(tmp_path: Path) -> None:
    """Every function's .aws-sam/build/<Function>/ holds exactly the files of its seglog build artifact (for the
    template's own architecture, arm64), and the built template points each function at that directory."""
    manifest = Builder().build()
    sam = SamCli(Toolchain.find(WORKSPACE, "3.13"))
    sam.ensure()
    started = time.monotonic()

    output = sam.run(["build", "--template-file", str(WORKSPACE / "template.yaml"),
                      "--build-dir", str(tmp_path / "build")], cwd=WORKSPACE)

    seconds = time.monotonic() - started
    assert "Build Succeeded" in output, output[-2000:]
    built = yaml.load((tmp_path / "build" / "template.yaml").read_text(), Loader=yaml.BaseLoader)
    for function in manifest.functions:
        assert tree.tree_digest(manifest.artifact_of(function).code) == tree.tree_digest(
            tmp_path / "build" / function), function
        assert function == built["Resources"][function]["Properties"]["CodeUri"]
    print(f"sam build of {len(manifest.functions)} functions: {seconds:.1f} s")
