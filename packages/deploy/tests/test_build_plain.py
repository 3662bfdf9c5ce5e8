"""seglog build on an ordinary SAM app (issue 36, point 2): a CodeUri that is a plain folder, outside any uv
workspace, is built the way ``sam build`` builds a Python function: the folder's files, and the packages its
requirements.txt names installed for the function's platform; reproducible, reused while nothing changed, and
built beside the template."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from seglog_awsmodel.template import load_template
from seglog_deploy.build import Builder, host_arch
from seglog_deploy.errors import BuildError
from seglog_deploy.package import function_ids
from seglog_deploy.targets import group, is_plain, read_functions

APP = """\
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    CodeUri: hello/
Resources:
  HelloFunction:
    Type: AWS::Serverless::Function
    Properties:
      Handler: app.handler
"""


def make_app(root: Path) -> Path:
    (root / "hello").mkdir(parents=True)
    (root / "hello" / "app.py").write_text("import idna\n\ndef handler(event, context):\n    return idna.encode('x')\n")
    (root / "hello" / "requirements.txt").write_text("# what sam build installs\nidna==3.10  # punycode\n")
    (root / "template.yaml").write_text(APP)
    return root / "template.yaml"


def test_a_plain_folder_is_its_files_and_its_requirements(tmp_path: Path) -> None:
    template = make_app(tmp_path / "app")
    lines: list[str] = []
    builder = Builder(template, arch=host_arch(), progress=lines.append)
    manifest = builder.build()

    assert (tmp_path / "app" / ".seglog" / "build") == builder.out
    [record] = manifest.artifacts.values()
    assert "hello" == record.package
    names = set(zipfile.ZipFile(record.zip).namelist())
    assert {"app.py", "requirements.txt", "idna/__init__.py"} <= names, sorted(names)[:20]
    assert not any(name.startswith(("boto3/", "botocore/")) for name in names)  # the runtime's, not shipped

    again = Builder(template, arch=host_arch(), progress=lines.append).build()
    assert manifest == again and any("reused" in line for line in lines)
    (tmp_path / "app" / "hello" / "app.py").write_text("def handler(event, context):\n    return 1\n")
    changed = Builder(template, arch=host_arch()).build()
    assert set(changed.artifacts) != set(manifest.artifacts)


def test_seglog_s_own_code_uri_is_a_workspace_package_and_the_example_s_is_plain() -> None:
    root = Path(__file__).resolve().parents[3]
    [seglog] = group(read_functions(load_template(root / "template.yaml")))[:1]
    assert (False, "seglog-services") == (is_plain(seglog.code_uri), seglog.package)
    [example] = group(read_functions(load_template(root / "examples" / "orders-http" / "template.yaml")))
    assert (True, None) == (is_plain(example.code_uri), example.project)


def test_a_runtime_not_installed_here_is_built_with_the_nearest_python_and_says_so(tmp_path: Path) -> None:
    """python3.99 exists nowhere: the folder is built all the same, with a warning naming what stood in, and without
    bytecode (a .pyc of another Python would not load on the runtime's)."""
    (tmp_path / "app" / "hello").mkdir(parents=True)
    (tmp_path / "app" / "hello" / "app.py").write_text("def handler(event, context):\n    return 1\n")
    (tmp_path / "app" / "template.yaml").write_text(APP.replace("python3.13", "python3.99"))
    lines: list[str] = []
    manifest = Builder(tmp_path / "app" / "template.yaml", arch=host_arch(), progress=lines.append).build()
    [record] = manifest.artifacts.values()
    assert any("python3.99 is not installed here" in line and "nearest installed" in line for line in lines), lines
    assert not record.bytecode
    assert not any(name.endswith(".pyc") for name in zipfile.ZipFile(record.zip).namelist())


INLINE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  PingFunction:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      InlineCode: |
        def handler(event, context):
            return "pong"
"""


def test_inline_code_is_built_as_index_py_and_never_uploaded(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(INLINE)
    manifest = Builder(tmp_path / "template.yaml", arch=host_arch()).build()
    [record] = manifest.artifacts.values()
    with zipfile.ZipFile(record.zip) as artifact:
        assert ["index.py"] == [n for n in artifact.namelist() if n.endswith(".py")]
        assert 'return "pong"' in artifact.read("index.py").decode()
    assert "index.handler" == manifest.functions["PingFunction"].handler
    assert [] == function_ids(load_template(tmp_path / "template.yaml").body)  # CloudFormation takes it as written


def test_inline_code_with_a_handler_outside_index_is_refused_with_the_right_one(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(INLINE.replace("Handler: index.handler", "Handler: app.handler"))
    with pytest.raises(BuildError, match=r"inline code is the file index.py, so its handler is index.<function>"):
        Builder(tmp_path / "template.yaml", arch=host_arch()).build()
