"""Every example starts with its README's commands as written, in a terminal (issue 36, "Done when": each is also
started by the README's own commands in a test, as the deploy section is: tests/deploy/test_readme_commands.py).

For each example of examples/, in a new bash at the repository root with a pseudo-terminal and a fresh machine's
environment (tests/deploy/terminal.py): the first sh block's ``./dev up ...`` must exit 0, and its ``./dev emulate
...`` runs in a window of its own until it serves the API on the README's port; then each line of the second sh
block, as written, in a new bash (after the block's ``eval "$(./dev env)"`` lines before it, as in one shell):

- each must exit 0;
- a curl must be answered the status its comment begins with (``# 404``), else a 2xx (the test's own
  ``$CURL_HOME/.curlrc`` has curl print the status after the body: the line itself is typed as written);
- a line whose comment shows a JSON object must print that object (``curl ... # {"message": "hello world"}``);
- a DynamoDB ``get-item`` must print the item: typed again, as a person would, until the asynchronous work
  (a stream, a queue, a schedule, an event) has written it, within :data:`EFFECT_SECONDS`.

Ctrl-C then stops the emulator, with status 0. The first ``up`` starts the default local stack, the next ones reuse
it, and it is stopped at the end (``./dev down``, what a person does when done), leaving no port open. Files the
lines write (``note.txt``) are removed. The ports are the README's (the default stack's, 4599): the
``readme_ports`` lock keeps this test and the deploy section's from running at once.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from deploy.readme import Command
from deploy.terminal import Terminal, fresh_shell_env
from deploy.test_readme_commands import (
    REPO,
    Person,
    invocations,
    nothing_in_the_way,
    ports_of,
    stack_config,
    still_open,
    tail,
)
from examples.support import EXAMPLES
from seglog_stack import StackManager

pytestmark = pytest.mark.stack

#: Seconds a line that reads an asynchronous effect is typed again for.
EFFECT_SECONDS = 60.0
#: Seconds one line may take (a ``./dev`` syncs the environment first).
LINE_SECONDS = 120.0
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith("."))


def blocks(example: str) -> tuple[list[Command], list[Command]]:
    """The README's first sh block (its two commands) and second (what to try), line by line."""
    text = (EXAMPLES / example / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^```sh\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert len(found) >= 2, f"examples/{example}/README.md needs its two commands and what to try, in sh blocks"
    start, tries = ([Command(line.strip()) for line in block.splitlines() if line.strip()] for block in found[:2])
    return start, tries


def shown_json(line: str) -> object | None:
    """The JSON object a line's comment shows it printing, if the comment shows one."""
    _, sep, comment = line.partition(" # ")
    brace = comment.find("{")
    if not sep or brace < 0:
        return None
    try:
        return json.loads(comment[brace:])
    except ValueError:
        return None


def untracked() -> set[str]:
    listed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, text=True,
                            capture_output=True, check=True).stdout
    return {line[3:] for line in listed.splitlines() if line.startswith("??")}


def curl_home(directory: Path) -> Path:
    """A ``.curlrc`` that has curl print the answer's status on a line of its own after the body."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".curlrc").write_text('write-out = "\\n%{http_code}\\n"\n', encoding="utf-8")
    return directory


def shown_status(line: str) -> int | None:
    """The status a line's comment begins with (``# 202: ...``), if any."""
    match = re.match(r"\s*(\d{3})\b", line.partition(" # ")[2])
    return int(match.group(1)) if match else None


def type_line(line: str, before: list[str], env: dict[str, str], emulator: Terminal) -> str:
    """``line`` in a new bash after ``before`` (the shell's earlier ``eval`` lines); its output, once it exited 0
    (``emulator``: the window whose output a failure shows too)."""
    deadline = time.monotonic() + (EFFECT_SECONDS if " get-item " in line else 0.0)
    while True:
        window = Terminal("\n".join([*before, line]), cwd=REPO, env=env)  # lines: a comment ends at its own
        try:
            status = window.wait(LINE_SECONDS)
            output = window.output
        finally:
            window.close()
        assert 0 == status, f"`{line}` exited {status}:\n{tail(output)}"
        if " get-item " not in line or '"Item"' in output or time.monotonic() > deadline:
            break
        time.sleep(1.0)  # not written yet: the stream, queue or schedule is still at work
    if " get-item " in line:
        assert '"Item"' in output, (f"`{line}` found no item within {EFFECT_SECONDS:.0f} s:\n{tail(output)}\n"
                                    f"the emulator's window:\n{tail(emulator.output)}")
    if line.startswith("curl "):
        body, _, status = output.rstrip().rpartition("\n")
        expected_status = shown_status(line)
        assert (int(status) == expected_status if expected_status else 200 <= int(status) < 300), \
            f"`{line}` was answered {status}:\n{tail(output)}"
        output = body
    expected = shown_json(line)
    if expected is not None:
        printed = output[output.find("{"):] if "{" in output else output
        assert expected == json.loads(printed), f"`{line}` printed:\n{tail(output)}"
    return output


@pytest.mark.timeout(1200)  # it may wait for the deploy section's test to let go of the ports
def test_every_example_runs_with_its_readme_commands_as_written(readme_ports: None, tmp_path: Path) -> None:
    starts = {name: blocks(name) for name in NAMES}
    commands = [command for start, _ in starts.values() for command in start]
    nothing_in_the_way(commands)
    ports = ports_of(commands)
    configs = {stack_config(i) for c in commands for i in invocations(c) if i.command in ("up", "emulate")}
    env = fresh_shell_env()
    person = Person(env=env, prompt="")
    env = {**env, "CURL_HOME": str(curl_home(tmp_path / "curl"))}  # the lines' shells only
    before = untracked()
    try:
        for start, tries in starts.values():
            for command in start:
                person.type(command)
            shell: list[str] = []
            for command in tries:
                if command.text.startswith("eval "):
                    shell.append(command.text)  # a shell's state: later lines run after it
                    continue
                type_line(command.text, shell, env, person.running[-1])
            person.interrupt_running()
    finally:
        for window in person.running:  # left by a line that failed
            window.close()
        for config in configs:
            StackManager(config).down()
        for path in untracked() - before:
            (REPO / path).unlink(missing_ok=True)
    assert [] == still_open(ports)


def test_every_example_has_what_to_try_after_its_two_commands() -> None:
    """The second block is what this test types: every example has one, and lines it can check."""
    for name in NAMES:
        _, tries = blocks(name)
        assert any(shown_json(c.text) is not None or " get-item " in c.text for c in tries), name
