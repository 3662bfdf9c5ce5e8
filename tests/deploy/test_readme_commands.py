"""Every command of README.md's "Pointing it at AWS" works as written on a fresh machine (issue 22, point 4). The
commands come from the README itself (tests/deploy/readme.py: the section's sh block and its command spans), so
a changed README is a changed test; none is copied here.

Run verbatim, in README order, each in a new bash at the repository root with a pseudo-terminal (a terminal
window: tests/deploy/terminal.py), and the environment of a fresh machine's shell (no AWS configuration, no
AWS_* or SEGLOG_* variable naming an account, region, endpoint or stack):

- the sh block's ``./dev build``: it needs no AWS (the artifact is reused from .seglog/build, which this session's
  ``manifest`` fixture made or found);
- every command from "To try a deploy without AWS:" on: the deploy profile's LocalStack up, the deploy (it asks
  ``execute? [y/N]``, the question the README quotes, and is answered y as a person would), the destroy, the
  profile's down; then the emulator recipe: ``emulate`` in a window of its own until Ctrl-C (sent before the
  ``down`` that follows, as the README says), and ``eval "$(./dev env)"; ./dev smoke --api-url ...`` in another.

Each must exit 0, and what it did is read back: the stack CREATE_COMPLETE at the deploy's endpoint after the
deploy, gone (and its record forgotten) after the destroy, smoke PASS, and at the end no port the commands used
still open.

Not run: the block's ``./dev deploy --stack-name seglog --region eu-west-1`` and ``./dev smoke --stack seglog``,
and the spans ``eval "$(./dev env --stack seglog)"`` and ``./dev destroy --stack-name seglog``. They need an AWS
account, and the README's LocalStack form of them is the one run above. They are checked as far as is honest
without AWS: seglog's CLI parses each, with the options the block's comment offers in brackets; ``--parameter``
values meet the template's constraints (check_parameters, as deploy checks them before building); the region is
one AWS has; the four name one stack. Every stack name of the section is one CloudFormation accepts (LocalStack
creates half a stack under a name AWS refuses). ``./dev lint`` is the dev script's own command, which CI runs
verbatim: it must be a line of .ci/run. (``sam build && sam deploy`` is no ``./dev`` command:
test_samconfig.py runs a bare ``sam deploy``.)

The README fixes the ports (4566 for the deploy target, 4567 and 8000 for the emulator's stack, 4599 for its
API); no other test uses them (the test stacks sit at SEGLOG_TEST_PORT_BASE, 4640, and up). When one is busy, or
a local stack of this clone runs (the README's ``down`` would stop it), the test fails saying what to stop: it
never skips.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import click
import pytest
from botocore.exceptions import ClientError

from deploy.readme import Command, Section, read_section
from deploy.terminal import Terminal, fresh_shell_env
from seglog_awsmodel.parameters import check_parameters
from seglog_awsmodel.template import load_template
from seglog_cli.build_commands import parse_parameters
from seglog_cli.main import cli
from seglog_deploy.deployer_policy import STACK_NAME
from seglog_deploy.manifest import Manifest
from seglog_deploy.record import StackRecord, stacks_dir
from seglog_deploy.target import Target
from seglog_stack import Profile, StackConfig, StackManager, StackState

pytestmark = [pytest.mark.stack, pytest.mark.deploy]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: CI's script: the dev script's own commands the README gives must be lines of it.
CI_SCRIPT = REPO / ".ci" / "run"
#: seglog commands that need no AWS account: a line of the sh block made of them runs here too.
NEEDS_NO_AWS = frozenset({"build"})
#: seglog commands that start a local stack: the ports of theirs must be free, and free again at the end.
STARTS_A_STACK = frozenset({"up", "emulate"})
#: Seconds a command may take: a deploy builds first when the tree changed since .seglog/build.
COMMAND_TIMEOUT = 420.0
#: Seconds the emulator may take to serve its API (it builds this machine's artifact when missing).
EMULATOR_START_TIMEOUT = 300.0


@dataclass(frozen=True)
class Invocation:
    """One ``./dev`` of a command, as seglog's CLI reads it: its global options, the command's name, and the
    command's parameters (None for the dev script's own commands, ``lint``, which are not seglog's)."""

    words: list[str]
    group: dict[str, Any]
    command: str
    params: dict[str, Any] | None

    @property
    def is_seglog(self) -> bool:
        return self.params is not None


def parse(words: list[str]) -> Invocation:
    """``words`` (what follows ``./dev``) read by seglog's CLI: its options, the command, the command's options
    and values, as a run would read them.

    Raises:
        click.ClickException: a word the CLI refuses (an unknown option, a missing required one, a bad value).
    """
    with pytest.MonkeyPatch.context() as patch:  # options read from variables as a fresh shell has them
        fresh = fresh_shell_env()
        for key in os.environ.keys() - fresh.keys():
            patch.delenv(key)
        for key, value in fresh.items():
            patch.setenv(key, value)
        group = cli.make_context("seglog", list(words))
        name = words[len(words) - len(group.args) - 1]
        command = cli.get_command(group, name)
        params = None if command is None else command.make_context(name, list(group.args), parent=group).params
    return Invocation(words=words, group=group.params, command=name, params=params)


def invocations(command: Command, *, with_optional: bool = False) -> list[Invocation]:
    """Each ``./dev`` of ``command`` as the CLI reads it (``with_optional``: with the options its comment offers);
    a word the CLI refuses fails the test, naming the command."""
    found = command.invocations()
    assert found, f"`{command.text}` runs no ./dev"
    try:
        return [parse([*words, *command.optional] if with_optional else words) for words in found]
    except click.ClickException as exc:
        pytest.fail(f"`{command.text}`{f' with {command.optional}' if with_optional else ''}: {exc.format_message()}")


@pytest.fixture(scope="module")
def section() -> Section:
    return read_section(README)


def runs_here(command: Command) -> bool:
    return all(i.command in NEEDS_NO_AWS for i in invocations(command))


def for_aws(section: Section) -> list[Command]:
    """The AWS-only commands: the block's lines that are not run here and the seglog commands of the prose."""
    return [c for c in (*section.block, *section.inline)
            if not runs_here(c) and all(i.is_seglog for i in invocations(c))]


def stack_names(params: dict[str, Any]) -> list[str]:
    """The stack a command names: ``--stack-name`` (deploy, destroy) or ``--stack`` (smoke, env)."""
    return [params["stack_name"]] if params.get("stack_name") else []


# ------------------------------------------------------------------------------------------------ not run


def test_the_deploy_to_aws_parses_as_the_cli_reads_it_with_values_aws_accepts(section: Section) -> None:
    """What can be checked of the AWS commands without an account: seglog's CLI takes every word of them, and the
    options the block's comment offers; parameter values meet the template's constraints, the region exists, and
    the commands that deploy, use and destroy the stack name the same one."""
    commands = for_aws(section)
    assert {"deploy", "destroy"} <= {i.command for c in commands for i in invocations(c)}, \
        f"the AWS commands this test expects are not where it looks in {README}: {[c.text for c in commands]}"
    template = load_template(REPO / "template.yaml").body
    regions = boto3.Session().get_available_regions("cloudformation")
    named: dict[str, list[str]] = {}
    for command in commands:
        for invocation in invocations(command, with_optional=True):
            assert invocation.params is not None
            values = {k: str(v) for k, v in parse_parameters(invocation.params.get("parameters") or ()).items()}
            check_parameters(template, values)  # raises ParameterValueError, naming the value and the constraint
            region = invocation.params.get("region")
            assert region is None or region in regions, f"`{command.text}`: no AWS region {region!r}"
            for name in stack_names(invocation.params):
                named.setdefault(name, []).append(command.text)
    assert 1 == len(named), f"the AWS commands should deploy, use and destroy one stack: {named}"


def test_every_stack_name_in_the_section_is_one_cloudformation_accepts(section: Section) -> None:
    """AWS refuses the change set of a name outside CloudFormation's pattern; LocalStack creates part of the stack
    and leaves it ROLLBACK_COMPLETE, so the run alone would not say why."""
    commands = [*section.block, *section.inline, *section.local]
    names: dict[str, str] = {}
    for command in commands:
        for invocation in invocations(command):
            for name in stack_names(invocation.params or {}):
                names.setdefault(name, command.text)
    assert names
    assert {} == {name: text for name, text in names.items() if not STACK_NAME.fullmatch(name)}


def test_the_dev_scripts_own_commands_are_run_by_ci_as_written(section: Section) -> None:
    """``./dev lint`` is not seglog's: CI runs it, as written, so a README line CI does not run is a stale one."""
    own = [c.text for c in (*section.block, *section.inline, *section.local)
           if not all(i.is_seglog for i in invocations(c))]
    assert own, f"no dev script command in the section of {README} (this test checks them)"
    ci = {line.strip() for line in CI_SCRIPT.read_text(encoding="utf-8").splitlines()}
    assert [] == [text for text in own if text not in ci]


# ------------------------------------------------------------------------------------------------ run


def stack_config(invocation: Invocation) -> StackConfig:
    """The local stack an invocation means, in this clone's run dir, as a fresh shell resolves it."""
    profile = Profile.parse(invocation.group.get("profile") or Profile.DYNAMODB_LOCAL)
    return StackConfig.resolve(profile, localstack_port=invocation.group.get("localstack_port"),
                               dynamodb_port=invocation.group.get("dynamodb_port"),
                               run_dir=REPO / ".seglog" / profile.value, env={})


def ports_of(commands: Iterable[Command]) -> dict[int, str]:
    """Each port the commands use (a URL's, a started stack's), with the first command using it."""
    ports: dict[int, str] = {}
    for command in commands:
        for invocation in invocations(command):
            if invocation.command in STARTS_A_STACK:
                config = stack_config(invocation)
                ports.setdefault(config.localstack_port, command.text)
                if config.profile.runs_dynamodb_local:
                    ports.setdefault(config.dynamodb_port, command.text)
            urls = [urlsplit(word).port for word in invocation.words if word.startswith(("http://", "https://"))]
            for port in (gateway_port(invocation), *urls):
                if port:
                    ports.setdefault(port, command.text)
    return ports


def gateway_port(invocation: Invocation) -> int | None:
    """The port of the HTTP API an ``emulate`` serves (its --port, or the CLI's default)."""
    if invocation.command != "emulate":
        return None
    return int((invocation.params or {}).get("port") or 0) or None


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def nothing_in_the_way(commands: list[Command]) -> None:
    """Fail, saying what to stop, when a port the README fixes is taken or a local stack of this clone runs."""
    for port, text in ports_of(commands).items():
        if listening(port):
            pytest.fail(f"port {port} is in use, and the README's `{text}` needs it: stop what listens there "
                        "(`./dev --profile deploy down` or `./dev down` in the clone that started it; `ss -ltnp` "
                        "names it) and run this test again")
    for invocation in (i for c in commands for i in invocations(c) if i.command in STARTS_A_STACK):
        config = stack_config(invocation)
        if StackManager(config).status().state is not StackState.STOPPED:
            pytest.fail(f"a local stack of this clone runs in {config.run_dir}, which the README's commands would "
                        f"reuse and stop: stop it (`./dev --profile {config.profile} down`) and run this test again")


def tail(text: str, size: int = 4000) -> str:
    return text if len(text) <= size else "...\n" + text[-size:]


def stack_status(target: Target, stack_name: str) -> str | None:
    """The stack's status, or None when CloudFormation no longer has it."""
    try:
        stacks: list[dict[str, Any]] = target.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise
    return str(stacks[0]["StackStatus"])


@dataclass
class Person:
    """Someone following the README at a terminal: each command in a new window, answering what it asks."""

    env: dict[str, str]
    prompt: str
    #: Windows whose command runs until Ctrl-C (the emulator).
    running: list[Terminal] = field(default_factory=list)
    #: The stacks deployed so far, by name, as their deploy recorded them.
    deployed: dict[str, StackRecord] = field(default_factory=dict)

    def type(self, command: Command) -> None:
        """Run ``command`` as written and check what it did."""
        parsed = invocations(command)
        if any(i.command == "down" for i in parsed):
            self.interrupt_running()  # the README: Ctrl-C stops the emulator, then `down` its stack
        window = Terminal(command.text, cwd=REPO, env=self.env)
        if any(i.command == "emulate" for i in parsed):
            self.running.append(window)
            self.wait_until_serving(window, command, [port for i in parsed if (port := gateway_port(i))])
            return
        try:
            if any(i.command == "deploy" and not (i.params or {}).get("yes") for i in parsed):
                asked = window.wait_for(self.prompt, COMMAND_TIMEOUT)
                assert asked, f"`{command.text}` did not ask {self.prompt!r}:\n{tail(window.output)}"
                window.type_line("y")
            status = window.wait(COMMAND_TIMEOUT)
            output = window.output
        finally:
            window.close()
        assert 0 == status, f"`{command.text}` exited {status}:\n{tail(output)}"
        for invocation in parsed:
            self.check(invocation, command, output)

    def check(self, invocation: Invocation, command: Command, output: str) -> None:
        params = invocation.params or {}
        if invocation.command == "deploy":
            record = StackRecord.load(params["stack_name"], stacks_dir(REPO))
            assert params["endpoint_url"] == record.endpoint_url, record
            self.deployed[record.stack_name] = record
            status = stack_status(target_of(record), record.stack_name)
            assert "CREATE_COMPLETE" == status, f"`{command.text}` left the stack {status}:\n{tail(output)}"
        elif invocation.command == "destroy":
            deployed = self.deployed.get(params["stack_name"])
            assert deployed is not None, f"`{command.text}` removes a stack no command before it deployed"
            assert stack_status(target_of(deployed), deployed.stack_name) in (None, "DELETE_COMPLETE"), tail(output)
            assert not (stacks_dir(REPO) / f"{deployed.stack_name}.json").exists(), "destroy kept the stack's record"
        elif invocation.command == "smoke":
            assert any(line.startswith("PASS") for line in output.splitlines()), tail(output)

    def wait_until_serving(self, window: Terminal, command: Command, ports: list[int]) -> None:
        """Until the emulator's API accepts connections on its port, as a person waits for it to come up."""
        deadline = time.monotonic() + EMULATOR_START_TIMEOUT
        while not all(listening(port) for port in ports):
            assert window.process.poll() is None, f"`{command.text}` exited:\n{tail(window.output)}"
            assert time.monotonic() < deadline, f"`{command.text}` never served {ports}:\n{tail(window.output)}"
            time.sleep(0.5)

    def interrupt_running(self) -> None:
        """Ctrl-C in each window still running; each must stop, with status 0."""
        while self.running:
            window = self.running.pop()
            try:
                window.interrupt()
                status = window.wait(120.0)
                assert 0 == status, f"`{window.text}` after Ctrl-C: status {status}\n{tail(window.output)}"
            finally:
                window.close()


def target_of(record: StackRecord) -> Target:
    return Target.resolve(region=record.region, endpoint_url=record.endpoint_url, env={})


def still_open(ports: Iterable[int], within: float = 15.0) -> list[int]:
    """The ports something still listens on after ``within`` seconds (a process stopping lets go of its own)."""
    deadline = time.monotonic() + within
    while (open_ := [port for port in ports if listening(port)]) and time.monotonic() < deadline:
        time.sleep(0.5)
    return open_


@pytest.mark.timeout(1200)  # it may wait for tests/examples/test_readme_terminal.py to let go of the ports
def test_the_readme_deploys_to_localstack_and_removes_it_with_its_commands_as_written(
        section: Section, manifest: Manifest, lambda_build: Manifest, readme_ports: None) -> None:
    """The module's docstring says what runs, in what order, and what is read back. ``manifest`` and
    ``lambda_build`` are the session's builds (arm64 for the deploy, this machine's for the emulator), made or
    found before the clock of the commands starts: the commands reuse them."""
    commands = [*(c for c in section.block if runs_here(c)), *section.local]
    assert {"up", "deploy", "destroy", "down"} <= {i.command for c in section.local for i in invocations(c)}, \
        f"the local commands are not where this test looks in {README}: {[c.text for c in section.local]}"
    nothing_in_the_way(commands)
    ports = ports_of(commands)
    person = Person(env=fresh_shell_env(), prompt=section.prompt)
    try:
        for command in commands:
            person.type(command)
        person.interrupt_running()
        left = still_open(ports)
    finally:
        for window in person.running:  # left by a command that failed
            window.close()
        for name in person.deployed:  # a failed run's stacks are gone with LocalStack: so are their records
            StackRecord.forget(name, stacks_dir(REPO))
        # Whatever still runs in the stacks' run dirs was started here (they were stopped before): stop it.
        for config in {stack_config(i) for c in commands for i in invocations(c) if i.command in STARTS_A_STACK}:
            StackManager(config).down()
    assert [] == left, "the README's commands leave these ports open: it should say how to stop what listens there"
