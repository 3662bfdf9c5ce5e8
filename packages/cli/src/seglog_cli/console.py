"""The live console for ``seglog emulate`` (on by default) and ``seglog chaos`` (with ``--console-port``).

Starting it sets ``SEGLOG_CONSOLE_FEED`` in this process's environment, so every process the emulator starts
from here on (supervisors, their children, the worker processes) feeds it, and this process's own events (the
supervisor's when it runs in-process, the chaos runner's faults and clients) are forwarded too. A console that
cannot start (its port is taken) is reported and left out: the emulator runs without it.
"""

from __future__ import annotations

import os
from typing import Final

import click

from seglog_emulator import logfeed
from seglog_plugin.resources import backend_of, resources_of
from seglog_report.console import Console, StackProbe
from seglog_stack.local import LocalDeployment

#: ``seglog emulate``'s console port (the gateway's default is 4599).
DEFAULT_CONSOLE_PORT: Final = 4598


def probe(deployment: LocalDeployment) -> StackProbe:
    """Reads the deployment's snapshot queue and dead-letter queue depths and its pending table."""
    backend = backend_of(deployment)
    resources = resources_of(deployment)
    return StackProbe(backend.sqs, {"queue": resources.queue_url, "dlq": resources.dlq_url}, backend.pending.scan)


def start_console(port: int, *, lane: str, deployment: LocalDeployment | None = None,
                  host: str = "127.0.0.1") -> Console | None:
    """Serve the console on ``host:port`` (0: any free port) and point this process's children at its feed;
    None (after saying why) when it cannot start.

    Args:
        lane: how this process's own events are shown ("supervisor" for ``seglog emulate``, "chaos").
        deployment: whose queues and pending table the console reads (None: not read).
    """
    try:
        console = Console(host=host, port=port, region=deployment.region if deployment else "us-east-1",
                          probe=probe(deployment) if deployment is not None else None)
    except OSError as exc:
        click.echo(f"  live console not started: port {port}: {exc.strerror or exc} "
                   "(--console-port 0 picks a free one, --no-console turns it off)", err=True)
        return None
    os.environ[logfeed.ENV_VAR] = console.feed_address
    logfeed.install(lane)
    console.start()
    click.echo(f"  live console at {console.url}", err=True)
    return console


def stop_console(console: Console | None) -> None:
    """Stop ``console`` and the feed to it (processes started later feed nothing)."""
    if console is None:
        return
    os.environ.pop(logfeed.ENV_VAR, None)
    logfeed.uninstall()
    console.stop()
