"""Running one of examples/ through the emulator on the session's local stack, as its README's two commands do
(`seglog up --template ... --stack-name ...`, then `seglog emulate` with the same two): provisioned under a fresh
stack name, built from its own folder, IAM enforced, torn down after."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from seglog_deploy.build import Builder, host_arch
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor import Supervisor
from seglog_stack import local
from seglog_stack.clients import local_client

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@contextlib.contextmanager
def running(example: str, stacks: Any, state_dir: Path, **settings: Any) -> Iterator[Supervisor]:
    """The example running (``settings``: more of :class:`EmulatorSettings`, as the README's flags give them)."""
    base = stacks.deployment("dynamodb-local")
    stack = f"{example.split('-')[-1]}-{uuid.uuid4().hex[:6]}"
    template = EXAMPLES / example / "template.yaml"
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, template=template,
                                 stack_name=stack)
    try:
        builder = Builder(template, arch=host_arch())
        builder.build()
        settings = EmulatorSettings(deployment=deployment, template=template, stack=stack, state_dir=state_dir,
                                    artifact=builder.manifest_path, **settings)
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
