"""EmulatorSettings: what the supervisor hands each child process (one JSON environment variable)."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from seglog_client.sigv4 import Credentials
from seglog_stack.info import ACCESS_KEY_ID, SECRET_ACCESS_KEY
from seglog_stack.local import LocalDeployment

ENV_VAR: Final = "SEGLOG_EMULATOR"
#: The file descriptor of the API's listening socket, inherited from whoever made it (the supervisor, or the process
#: that starts the supervisor): the gateway accepts on it, so a restarted gateway or supervisor finds the socket open
#: all along and a client's connection waits in its backlog instead of being refused (API Gateway never refuses one
#: while a function restarts). Issue 34: clients gave up after 25 ConnectionRefused tries while a gateway restarted.
LISTENER_ENV: Final = "SEGLOG_GATEWAY_FD"
#: Connections the listening socket queues while no gateway accepts (a restart): a chaos run's clients and more.
LISTEN_BACKLOG: Final = 128
#: The key pair the gateway accepts unless told otherwise: the local stack's (what `seglog env` exports).
LOCAL_CREDENTIALS: Final = Credentials(ACCESS_KEY_ID, SECRET_ACCESS_KEY)


@dataclass(frozen=True, kw_only=True)
class EmulatorSettings:
    """One emulator run.

    Attributes:
        deployment: the local stack's endpoints and the template's resources on it.
        template: the template.yaml the functions and mappings are read from.
        stack: the stack name the resources were provisioned under (physical names derive from it).
        state_dir: checkpoints, ready markers, the fault log; kept across restarts.
        parameters: template parameter overrides.
        host, port: where the HTTP gateway listens.
        log_level: of the children and the worker processes.
        schedule_scale: how many times faster than real time scheduled rules' clocks run (1: real time; 60: an
            hour of schedule passes in a real minute).
        api_credentials: the keys the gateway accepts on routes with IAM authorization (as IAM would know them
            on AWS); requests signed with any other key are refused as API Gateway refuses them.
        iam: evaluate every AWS call a function makes against its policies from the template, as AWS does
            (:mod:`seglog_emulator.iam`); ``seglog emulate --no-iam`` turns it off.
        alarm_scale: seconds of real time per second of the alarms' periods (1: real time; 0.05: a 60 s period
            passes in 3 s), for the alarm watcher (:mod:`seglog_emulator.alarm_watch`).
        artifact: the code the functions run: a build manifest, an artifact directory or an unpacked tree
            (:mod:`seglog_emulator.artifacts`); None: the supervisor builds this machine's twin (cached).
    """

    deployment: LocalDeployment
    template: Path
    stack: str
    state_dir: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0
    log_level: str = "INFO"
    schedule_scale: float = 1.0
    api_credentials: tuple[Credentials, ...] = (LOCAL_CREDENTIALS,)
    iam: bool = True
    artifact: Path | None = None
    alarm_scale: float = 1.0

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def to_json(self) -> str:
        return json.dumps({"deployment": self.deployment.to_dict(), "template": str(self.template),
                           "stack": self.stack, "state_dir": str(self.state_dir), "parameters": self.parameters,
                           "host": self.host, "port": self.port, "log_level": self.log_level,
                           "schedule_scale": self.schedule_scale, "iam": self.iam,
                           "alarm_scale": self.alarm_scale,
                           "api_credentials": [[c.access_key_id, c.secret_access_key, c.session_token]
                                               for c in self.api_credentials],
                           "artifact": str(self.artifact) if self.artifact is not None else None})

    @classmethod
    def from_json(cls, text: str) -> EmulatorSettings:
        data = json.loads(text)
        deployment = LocalDeployment.from_dict(data["deployment"])
        return cls(deployment=deployment, template=Path(data["template"]), stack=data["stack"],
                   state_dir=Path(data["state_dir"]), parameters=data["parameters"], host=data["host"],
                   port=int(data["port"]), log_level=data["log_level"],
                   schedule_scale=float(data.get("schedule_scale", 1.0)), iam=bool(data.get("iam", True)),
                   alarm_scale=float(data.get("alarm_scale", 1.0)),
                   api_credentials=tuple(Credentials(*c) for c in data.get("api_credentials") or
                                         [[ACCESS_KEY_ID, SECRET_ACCESS_KEY, None]]),
                   artifact=Path(data["artifact"]) if data.get("artifact") else None)

    @classmethod
    def from_env(cls) -> EmulatorSettings:
        raw = os.environ.get(ENV_VAR)
        if not raw:
            raise RuntimeError(f"{ENV_VAR} is not set: emulator children are started by `seglog emulate`")
        return cls.from_json(raw)


def listener(host: str, port: int) -> socket.socket:
    """The API's listening socket: the one this process inherited (:data:`LISTENER_ENV`), else a new one on
    ``host:port`` (0: any free port). Inheritable, so the supervisor can hand it to its gateway children."""
    inherited = os.environ.get(LISTENER_ENV)
    sock = socket.socket(fileno=int(inherited)) if inherited else socket.create_server((host, port),
                                                                                        backlog=LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock
