"""Running one of examples/ through the emulator on the session's local stack, as its README's two commands say
(issue 36, point 5): the README's first sh block must hold exactly ``./dev up ...`` and ``./dev emulate ...`` for
the example's own template; both are parsed by seglog's own CLI, and the template, stack name, parameters and
emulator options they give are what the example runs with (provisioned, built from its own folder, IAM as the
command says, torn down after). Only the ports are the session's (the README's are the emulator's defaults)."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from seglog_cli.build_commands import parse_parameters
from seglog_cli.main import cli
from seglog_deploy.build import Builder, host_arch
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor import Supervisor
from seglog_stack import local
from seglog_stack.clients import local_client

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def readme_commands(example: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The options of the ``./dev up`` and ``./dev emulate`` commands of the example's README, as seglog's CLI
    parses them.

    Raises:
        AssertionError: the README's first sh block is not those two commands, for the example's own template.
    """
    text = (EXAMPLES / example / "README.md").read_text()
    block = re.search(r"^```sh\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block is not None, f"examples/{example}/README.md has no sh block"
    lines = [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.strip()]
    assert [line[:2] for line in lines] == [["./dev", "up"], ["./dev", "emulate"]], lines
    root = cli.make_context("seglog", ["up"], resilient_parsing=True)
    parsed = []
    for line in lines:
        command = cli.get_command(root, line[1])
        assert command is not None
        parsed.append(command.make_context(line[1], line[2:]).params)
    up, emulate = parsed
    template = Path("examples") / example / "template.yaml"
    assert (template, template) == (up["template"], emulate["template"]), "the README runs another template"
    assert up["stack_name"] == emulate["stack_name"] and up["parameters"] == emulate["parameters"]
    return up, emulate


@contextlib.contextmanager
def running(example: str, stacks: Any, state_dir: Path) -> Iterator[Supervisor]:
    """The example running as its README's commands start it."""
    up, emulate = readme_commands(example)
    base = stacks.deployment("dynamodb-local")
    stack = up["stack_name"]
    template = EXAMPLES / example / "template.yaml"
    parameters = parse_parameters(up["parameters"])
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, template=template,
                                 stack_name=stack, parameters=parameters)
    try:
        builder = Builder(template, arch=host_arch())
        builder.build()
        settings = EmulatorSettings(deployment=deployment, template=template, stack=stack, state_dir=state_dir,
                                    artifact=builder.manifest_path, parameters=parameters, iam=emulate["iam"],
                                    schedule_scale=emulate["schedule_scale"], alarm_scale=emulate["alarm_scale"])
        supervisor = Supervisor(settings)
        supervisor.start()
        try:
            supervisor.wait_ready()
            yield supervisor
        finally:
            supervisor.stop()
    finally:
        local.deprovision(base.endpoints, region=base.region, stack_name=stack, template=template)


def client(supervisor: Supervisor, service: str) -> Any:
    deployment = supervisor.settings.deployment
    return local_client(service, endpoint_url=deployment.endpoints[service], region=deployment.region)


def wait_for(found: Callable[[], Any], timeout: float, what: str) -> Any:
    """``found()``'s first truthy value, polled until ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def call(method: str, url: str, body: object = None) -> tuple[int, Any]:
    """One request, and (status, JSON answer); a body that is not bytes is sent as JSON."""
    headers = {}
    if body is not None and not isinstance(body, bytes):
        body, headers = json.dumps(body).encode(), {"content-type": "application/json"}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
